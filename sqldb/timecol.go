package sqldb

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/redstate/redstate"
)

// timeKind is how a time column stores instants.
type timeKind int

const (
	// unixMicros: an integer column of Unix microseconds (redstate's own tables).
	unixMicros timeKind = iota + 1
	// naive: a date-time without zone (SQLite/MySQL DATETIME, PostgreSQL TIMESTAMP), wall
	// clock in the column's location.
	naive
	// zoned: a date-time with zone (PostgreSQL TIMESTAMPTZ, MySQL TIMESTAMP).
	zoned
)

// sqliteTimeLayout is how naive times are written to and compared in SQLite: text with
// microseconds, the form Expr brings every stored value to. (SQLite's own date functions keep
// only milliseconds.)
const sqliteTimeLayout = "2006-01-02 15:04:05.000000"

// TimeColumn reads, writes and compares one time column whatever it stores: Unix
// microseconds in an integer column (redstate's own tables), or a date-time with or without
// zone (a team's DATETIME / TIMESTAMP columns). Naive date-times are wall clock in the
// column's location. On SQLite, where a DATETIME is text, Expr brings each value to
// "YYYY-MM-DD HH:MM:SS.ffffff" (a 'T' separator and 0 to 6 fraction digits are accepted), so
// values written with or without fractions compare as times; a value with a zone suffix is not
// supported. Instants come back in UTC.
type TimeColumn struct {
	kind    timeKind
	loc     *time.Location
	dialect Dialect
}

// MicrosColumn is the TimeColumn of an integer column of Unix microseconds.
func MicrosColumn(d Dialect) TimeColumn {
	return TimeColumn{kind: unixMicros, loc: time.UTC, dialect: d}
}

// TimeColumnOf returns the TimeColumn of a column of the database type typ (as ColumnTypes
// returns it): an integer type holds Unix microseconds, TIMESTAMPTZ (or "… WITH TIME ZONE")
// and MySQL's TIMESTAMP (an instant, read and written in the session time zone, UTC) an
// instant, any other DATE/TIME type (MySQL's DATETIME among them) a wall clock in loc (nil:
// UTC). Errors: EINVALID (not
// a time or integer type).
func TimeColumnOf(d Dialect, typ string, loc *time.Location) (TimeColumn, error) {
	if loc == nil {
		loc = time.UTC
	}
	t := strings.ToUpper(typ)
	switch {
	case strings.Contains(t, "INT"):
		return TimeColumn{kind: unixMicros, loc: time.UTC, dialect: d}, nil
	case strings.Contains(t, "TIMESTAMPTZ") || strings.Contains(t, "WITH TIME ZONE") || (d == MySQL && t == "TIMESTAMP"):
		return TimeColumn{kind: zoned, loc: time.UTC, dialect: d}, nil
	case strings.Contains(t, "DATE") || strings.Contains(t, "TIME"):
		return TimeColumn{kind: naive, loc: loc, dialect: d}, nil
	}
	return TimeColumn{}, redstate.Errorf(redstate.EINVALID, "type %s is neither a date-time nor an integer of Unix microseconds", typ)
}

// SameKind reports whether values of c and o can be compared with each other in SQL.
func (c TimeColumn) SameKind(o TimeColumn) bool {
	return c.kind == o.kind && (c.kind != naive || c.loc.String() == o.loc.String())
}

// Expr is the SQL expression of column col (already quoted, possibly qualified) to select,
// compare and order by.
func (c TimeColumn) Expr(col string) string {
	if c.kind == naive && c.dialect == SQLite {
		t := "replace(" + col + ", 'T', ' ')"
		return "substr(CASE WHEN length(" + col + ") = 19 THEN " + t + " || '.' ELSE " + t + " END || '000000', 1, 26)"
	}
	return col
}

// Arg is t as a statement argument compared with (or stored in) the column.
func (c TimeColumn) Arg(t time.Time) any {
	switch c.kind {
	case naive:
		wall := t.In(c.loc)
		if c.dialect == SQLite {
			return wall.Format(sqliteTimeLayout)
		}
		return time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
	case zoned:
		return t.UTC()
	}
	return t.UnixMicro()
}

// Dest returns a scan destination for Expr's value that stores the instant, in UTC, in t.
func (c TimeColumn) Dest(t *time.Time) sql.Scanner { return &timeDest{c: c, t: t} }

// timeDest is TimeColumn.Dest's scanner.
type timeDest struct {
	c TimeColumn
	t *time.Time
}

// Scan implements sql.Scanner.
func (d *timeDest) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*d.t = time.UnixMicro(v).UTC()
	case time.Time:
		if d.c.kind == naive {
			v = time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), d.c.loc)
		}
		*d.t = v.UTC()
	case []byte:
		return d.Scan(string(v))
	case string:
		for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if t, err := time.ParseInLocation(layout, v, d.c.loc); err == nil {
				*d.t = t.UTC()
				return nil
			}
		}
		return fmt.Errorf("time column: cannot read %q as a date-time", v)
	default:
		return fmt.Errorf("time column: cannot read %T (%v) as a time", src, src)
	}
	return nil
}
