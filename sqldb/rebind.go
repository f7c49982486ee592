package sqldb

import (
	"strconv"
	"strings"
)

// Rebind returns query with its `?` placeholders in the DB's dialect: unchanged for SQLite,
// `$1, $2, …` for PostgreSQL. A `?` inside a single-quoted string literal is left alone.
func (db *DB) Rebind(query string) string { return Rebind(db.Dialect, query) }

// Rebind is DB.Rebind for a dialect.
func Rebind(d Dialect, query string) string {
	if d != Postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n, quoted := 0, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted // '' inside a literal toggles twice: still quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
