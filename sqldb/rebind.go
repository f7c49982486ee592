package sqldb

import (
	"strconv"
	"strings"
)

// Rebind returns query with its `?` placeholders in the DB's dialect: unchanged for SQLite and
// MySQL, `$1, $2, …` for PostgreSQL. A `?` inside a single-quoted string literal or a double-quoted
// identifier is left alone.
func (db *DB) Rebind(query string) string { return Rebind(db.Dialect, query) }

// Rebind is DB.Rebind for a dialect.
func Rebind(d Dialect, query string) string {
	if d != Postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	var quote byte // the open quote (' or "), 0 outside quotes
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote closes and reopens: still quoted
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
