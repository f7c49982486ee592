package mysqlsource

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/sqldb"
)

// column is what the text form of a value needs to know about its column: the binary log
// gives an unsigned column's value as a signed integer of its width, an ENUM as its 1-based
// index, a SET as its bit mask and a BINARY(n) without its trailing zero bytes, where SELECT
// gives the number, the labels and the n bytes.
type column struct {
	Name string
	// DataType is information_schema's DATA_TYPE (int, varchar, timestamp, …).
	DataType string
	Unsigned bool
	// Labels are the values of an ENUM or SET column, in declaration order.
	Labels []string
	// Width is a BINARY(n) column's n (0 for other columns).
	Width int
}

// parseColumnType reads the unsigned flag, a BINARY's width and the ENUM/SET labels from
// COLUMN_TYPE ("int(10) unsigned", "binary(16)", "enum('a','b')", a quote inside a label
// doubled).
func parseColumnType(dataType, columnType string) column {
	c := column{DataType: strings.ToLower(dataType), Unsigned: strings.Contains(strings.ToLower(columnType), "unsigned")}
	if c.DataType == "binary" {
		if n, ok := strings.CutPrefix(strings.ToLower(columnType), "binary("); ok {
			c.Width, _ = strconv.Atoi(strings.TrimSuffix(n, ")"))
		}
		return c
	}
	if c.DataType != "enum" && c.DataType != "set" {
		return c
	}
	open, end := strings.IndexByte(columnType, '('), strings.LastIndexByte(columnType, ')')
	if open < 0 || end <= open {
		return c
	}
	body := columnType[open+1 : end]
	for i := 0; i < len(body); i++ {
		if body[i] != '\'' {
			continue
		}
		var b strings.Builder
		for i++; i < len(body); i++ {
			if body[i] == '\'' {
				if i+1 < len(body) && body[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(body[i])
		}
		c.Labels = append(c.Labels, b.String())
	}
	return c
}

// text is the index's text form of a column value read from the binary log (go-mysql, with
// ParseTime) or by SELECT (go-sql-driver, times in UTC): both paths give the same text for the
// same value. TIMESTAMP is an instant (RFC 3339 in UTC), DATETIME and DATE are the database's
// local time without a zone, as the index's datetime type expects.
func text(v any, c column) *string {
	var s string
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		s = padBinary(string(x), c)
	case string:
		s = padBinary(x, c)
	case time.Time:
		switch c.DataType {
		case "timestamp":
			s = x.UTC().Format(time.RFC3339Nano)
		case "date":
			s = x.Format("2006-01-02")
		default:
			s = x.Format("2006-01-02T15:04:05.999999999")
		}
	case int8:
		s = signed(int64(x), uint64(uint8(x)), c)
	case int16:
		s = signed(int64(x), uint64(uint16(x)), c)
	case int32:
		if c.DataType == "mediumint" && c.Unsigned && x < 0 {
			s = strconv.FormatUint(uint64(uint32(x)&0xffffff), 10)
		} else {
			s = signed(int64(x), uint64(uint32(x)), c)
		}
	case int64:
		s = signed(x, uint64(x), c)
	case int:
		s = signed(int64(x), uint64(x), c)
	case uint64:
		s = strconv.FormatUint(x, 10)
	case uint32:
		s = strconv.FormatUint(uint64(x), 10)
	case float32:
		s = strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	default:
		s = fmt.Sprint(x)
	}
	return &s
}

// padBinary gives a BINARY(n) value its n bytes: the binary log drops the trailing zero bytes
// the column pads values with (as Debezium's MySQL connector, DBZ-254, redstate puts them back).
func padBinary(s string, c column) string {
	if len(s) < c.Width {
		return s + strings.Repeat("\x00", c.Width-len(s))
	}
	return s
}

// signed formats an integer of the binary log: as unsigned (u, the same bits) for an unsigned
// column, as the label(s) for an ENUM or SET.
func signed(n int64, u uint64, c column) string {
	switch c.DataType {
	case "enum":
		if n >= 1 && int(n) <= len(c.Labels) {
			return c.Labels[n-1]
		}
		return ""
	case "set":
		var parts []string
		for i, l := range c.Labels {
			if uint64(n)&(1<<i) != 0 {
				parts = append(parts, l)
			}
		}
		return strings.Join(parts, ",")
	}
	if c.Unsigned && n < 0 {
		return strconv.FormatUint(u, 10)
	}
	return strconv.FormatInt(n, 10)
}

// SQLURL is the sqldb DSN of the source's pool for the server URL u: u itself, on the
// information_schema database when u names none (tables are named db.table).
func SQLURL(u string) string {
	base, query, _ := strings.Cut(u, "?")
	scheme, rest, _ := strings.Cut(base, "://")
	host, db, _ := strings.Cut(rest, "/")
	if db == "" {
		db = "information_schema"
	}
	out := scheme + "://" + host + "/" + db
	if query != "" {
		out += "?" + query
	}
	return out
}

// quote quotes a MySQL identifier.
func quote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// querier is a *sql.DB or a *sql.Conn.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// columns reads db.table's current columns in ordinal order.
func columns(ctx context.Context, q querier, db, table string) ([]column, error) {
	rows, err := q.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", db, table)
	if err != nil {
		return nil, sqldb.Map(err, "read the columns of "+db+"."+table)
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var name, dataType, columnType string
		if err := rows.Scan(&name, &dataType, &columnType); err != nil {
			return nil, sqldb.Map(err, "read the columns of "+db+"."+table)
		}
		c := parseColumnType(dataType, columnType)
		c.Name = name
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, sqldb.Map(err, "read the columns of "+db+"."+table)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mysql source: table %s.%s does not exist or has no columns visible to this user", db, table)
	}
	return out, nil
}

// scanRows reads every row of rows as text by cols (by name), calling f until it returns
// false; it returns how many rows it read and the last row.
func scanRows(rows *sql.Rows, cols []column, f func(map[string]*string) bool) (int, error) {
	names, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	byName := make(map[string]column, len(cols))
	for _, c := range cols {
		byName[c.Name] = c
	}
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		row := make(map[string]*string, len(names))
		for i, name := range names {
			row[name] = text(vals[i], byName[name])
		}
		n++
		if !f(row) {
			break
		}
	}
	return n, rows.Err()
}

// TableRows yields the current rows of db.table, converted as the binary log's rows are, for
// Indexer.Verify (redstate index verify --source mysql).
func TableRows(ctx context.Context, db *sqldb.DB, dbName, table string) index.RowSource {
	return func(f func(map[string]*string) bool) error {
		cols, err := columns(ctx, db, dbName, table)
		if err != nil {
			return err
		}
		rows, err := db.QueryContext(ctx, "SELECT * FROM "+quote(dbName)+"."+quote(table))
		if err != nil {
			return sqldb.Map(err, "read "+dbName+"."+table)
		}
		defer rows.Close()
		_, err = scanRows(rows, cols, f)
		return sqldb.Map(err, "read "+dbName+"."+table)
	}
}
