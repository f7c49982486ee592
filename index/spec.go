package index

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// ColumnType is the declared type of a kept column: the seed's setFieldFromString types, their
// nullable forms (suffix "?", e.g. "int?"), plus bool, decimal (kept as its exact text),
// datetime (normalised to ISO-8601), date, time and bytes (binary values, kept as standard
// base64: see TypeBytes). datetime and time may give the column's
// fractional-second precision, "datetime(6)", and decimal its precision and scale,
// "decimal(10,2)", as the database declares them: they say how to read the numbers Debezium
// writes without a schema (epoch milliseconds or microseconds; a decimal's unscaled integer),
// see DebeziumSettings. bytes may give a fixed width, "bytes(16)" for a BINARY(16), whose
// trailing zero bytes the MySQL binary log (and so Canal) drops.
type ColumnType string

// Column types.
const (
	TypeString   ColumnType = "string"
	TypeByte     ColumnType = "byte"
	TypeChar     ColumnType = "char"
	TypeShort    ColumnType = "short"
	TypeInt      ColumnType = "int"
	TypeLong     ColumnType = "long"
	TypeFloat    ColumnType = "float"
	TypeDouble   ColumnType = "double"
	TypeBool     ColumnType = "bool"
	TypeDecimal  ColumnType = "decimal"
	TypeDateTime ColumnType = "datetime"
	TypeDate     ColumnType = "date"
	TypeTime     ColumnType = "time"
	// TypeBytes is a binary column (BINARY, VARBINARY, BLOB, bytea): its row value and its key
	// segment are the bytes in standard base64 (RFC 4648 section 4, padded), whatever form the
	// source wrote them in (see Encoding).
	TypeBytes ColumnType = "bytes"
)

// baseTypes are the types a column may declare (each also with a "?" suffix).
var baseTypes = []ColumnType{TypeString, TypeByte, TypeChar, TypeShort, TypeInt, TypeLong, TypeFloat, TypeDouble, TypeBool, TypeDecimal, TypeDateTime, TypeDate, TypeTime, TypeBytes}

// Base returns the type without its nullable mark and its precision, and whether it was
// nullable.
func (t ColumnType) Base() (ColumnType, bool) {
	s, nullable := strings.CutSuffix(string(t), "?")
	if i := strings.IndexByte(s, '('); i >= 0 {
		s = s[:i]
	}
	return ColumnType(s), nullable
}

// columnType is a parsed ColumnType.
type columnType struct {
	base     ColumnType
	nullable bool
	// precision is the declared precision (datetime and time: fractional-second digits 0..9;
	// decimal: total digits; bytes: a BINARY's width in bytes, 1..255), -1 when none is declared; scale is a decimal's (0 with a precision
	// alone), -1 when none is declared.
	precision, scale int
}

// parse reads t; ok is false for a type that is not declared right (unknown, or a precision
// where the type takes none or out of its range).
func (t ColumnType) parse() (ct columnType, ok bool) {
	s, nullable := strings.CutSuffix(string(t), "?")
	ct = columnType{nullable: nullable, precision: -1, scale: -1}
	name, params, hasParams := strings.Cut(s, "(")
	ct.base = ColumnType(name)
	if !slices.Contains(baseTypes, ct.base) {
		return ct, false
	}
	if !hasParams {
		return ct, true
	}
	params, closed := strings.CutSuffix(params, ")")
	p, sc, twoParams := strings.Cut(params, ",")
	var err1, err2 error
	ct.precision, err1 = strconv.Atoi(strings.TrimSpace(p))
	if twoParams {
		ct.scale, err2 = strconv.Atoi(strings.TrimSpace(sc))
	}
	if !closed || err1 != nil || err2 != nil {
		return ct, false
	}
	switch ct.base {
	case TypeDateTime, TypeTime:
		return ct, !twoParams && ct.precision >= 0 && ct.precision <= 9
	case TypeDecimal:
		if !twoParams {
			ct.scale = 0
		}
		return ct, ct.precision >= 1 && ct.precision <= 1000 && ct.scale >= 0 && ct.scale <= ct.precision
	case TypeBytes:
		return ct, !twoParams && ct.precision >= 1 && ct.precision <= 255
	}
	return ct, false
}

// Column is one kept column.
type Column struct {
	// Name is the source column name.
	Name string `koanf:"name" json:"name"`
	// Type is its ColumnType.
	Type ColumnType `koanf:"type" json:"type"`
	// Field is the JSON field name in the stored row (default: Name).
	Field string `koanf:"field" json:"field,omitempty"`
}

// Part is one `code-column` part of an index dimension: the key segment is code + "-" + the
// escaped column value (seed: code "las", column "lastAddrId" gives "las-72").
type Part struct {
	// Code is the short segment code, e.g. "las": 1..16 characters from [A-Za-z0-9_].
	Code string `koanf:"code" json:"code"`
	// Column is the source column whose value completes the segment.
	Column string `koanf:"column" json:"column"`
}

// TableSpec declares one indexed table.
type TableSpec struct {
	// DB is the source database name (a key segment).
	DB string `koanf:"db" json:"db"`
	// Table is the source table name (a key segment).
	Table string `koanf:"table" json:"table"`
	// Key is the business-key column (seed: the business primary key).
	Key string `koanf:"key" json:"key"`
	// DeleteColumn is the logical-delete column (seed: "yn"): a row whose value is null or "0"
	// is deleted. Empty: no logical delete.
	DeleteColumn string `koanf:"delete-column" json:"deleteColumn,omitempty"`
	// Columns are the columns kept in the row JSON.
	Columns []Column `koanf:"columns" json:"columns"`
	// Dimensions are the condition combinations the table is queryable by, each a list of parts.
	Dimensions [][]Part `koanf:"dimensions" json:"dimensions"`
	// HashTag puts every key of the table in one Redis Cluster slot ("{prefix:db:table}"), the
	// opt-in that makes each row's change atomic on Cluster. Required on Cluster.
	HashTag bool `koanf:"hash-tag" json:"hashTag,omitempty"`
}

// Validate checks the spec and returns every problem at once. Errors: EINVALID.
func (s TableSpec) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !keyspace.ValidID(s.DB, 64, keyspace.TablePunct) {
		add("db %q must be 1..64 characters from [A-Za-z0-9_$.-]", s.DB)
	}
	if !keyspace.ValidID(s.Table, 64, keyspace.TablePunct) {
		add("table %q must be 1..64 characters from [A-Za-z0-9_$.-]", s.Table)
	}
	if s.Key == "" {
		add("key (the business-key column) is required")
	}
	cols := map[string]bool{}
	fields := map[string]bool{}
	for i, c := range s.Columns {
		if c.Name == "" {
			add("columns[%d].name is required", i)
		}
		if cols[c.Name] {
			add("columns[%d]: %q is declared twice", i, c.Name)
		}
		cols[c.Name] = true
		f := c.field()
		if fields[f] {
			add("columns[%d]: field %q is used twice", i, f)
		}
		fields[f] = true
		if _, ok := c.Type.parse(); !ok {
			add("columns[%d] (%s): unsupported type %q; use one of string, byte, char, short, int, long, float, double, bool, decimal, datetime, date, time, bytes (suffix ? for nullable; datetime(0..9), time(0..9) and decimal(p,s) give the precision, bytes(1..255) a BINARY's width)", i, c.Name, c.Type)
		}
	}
	if len(s.Dimensions) == 0 {
		add("dimensions: at least one condition combination is required")
	}
	seen := map[string]int{}
	for i, d := range s.Dimensions {
		if len(d) == 0 {
			add("dimensions[%d] is empty", i)
		}
		codes := map[string]bool{}
		for j, p := range d {
			if !keyspace.ValidID(p.Code, 16, keyspace.WordPunct) {
				add("dimensions[%d][%d].code %q must be 1..16 characters from [A-Za-z0-9_]", i, j, p.Code)
			}
			if p.Code == "cursor" || p.Code == "count" {
				add("dimensions[%d][%d].code %q is reserved for query paging", i, j, p.Code)
			}
			if p.Code == "fil" || p.Code == "kid" {
				add("dimensions[%d][%d].code %q is reserved: the row keys are <table>:fil-<id> (and kid-<id> before layout 2), which an index key starting with it would collide with", i, j, p.Code)
			}
			if codes[p.Code] {
				add("dimensions[%d]: code %q appears twice", i, p.Code)
			}
			codes[p.Code] = true
			if p.Column == "" {
				add("dimensions[%d][%d].column is required", i, j)
			}
		}
		sig := signature(d)
		if j, dup := seen[sig]; dup {
			add("dimensions[%d] has the same codes as dimensions[%d]", i, j)
		}
		seen[sig] = i
	}
	if len(problems) > 0 {
		return redstate.Errorf(redstate.EINVALID, "index table %s.%s: %s", s.DB, s.Table, strings.Join(problems, "; "))
	}
	return nil
}

// field returns the JSON field of c.
func (c Column) field() string {
	if c.Field != "" {
		return c.Field
	}
	return c.Name
}

// signature identifies a combination by its set of codes (sorted), the way queries name it.
func signature(parts []Part) string {
	codes := make([]string, len(parts))
	for i, p := range parts {
		codes[i] = p.Code
	}
	sort.Strings(codes)
	return strings.Join(codes, ",")
}
