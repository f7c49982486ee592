package mysqlsource

import (
	"strings"
)

// truncatedTable reads a TRUNCATE statement of the binary log (the statement as the client
// wrote it; MySQL logs TRUNCATE as a statement whatever binlog_format): the db and table it
// empties, the table unqualified in db. Leading comments are skipped; ok is false for any other
// statement.
func truncatedTable(query, db string) (string, string, bool) {
	q := strings.TrimSpace(query)
	for strings.HasPrefix(q, "/*") {
		end := strings.Index(q, "*/")
		if end < 0 {
			return "", "", false
		}
		q = strings.TrimSpace(q[end+2:])
	}
	word, rest := cutWord(q)
	if !strings.EqualFold(word, "TRUNCATE") {
		return "", "", false
	}
	if word, after := cutWord(rest); strings.EqualFold(word, "TABLE") {
		rest = after
	}
	first, rest, ok := cutIdent(strings.TrimSpace(rest))
	if !ok {
		return "", "", false
	}
	if strings.HasPrefix(rest, ".") {
		name, tail, ok := cutIdent(rest[1:])
		if !ok || strings.TrimRight(strings.TrimSpace(tail), ";") != "" {
			return "", "", false
		}
		return first, name, true
	}
	if strings.TrimRight(strings.TrimSpace(rest), ";") != "" {
		return "", "", false
	}
	return db, first, true
}

// cutWord splits s at its first run of spaces.
func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// cutIdent reads an identifier at the start of s, `quoted` (a doubled backtick is one) or bare.
func cutIdent(s string) (ident, rest string, ok bool) {
	if strings.HasPrefix(s, "`") {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '`' {
				if i+1 < len(s) && s[i+1] == '`' {
					b.WriteByte('`')
					i++
					continue
				}
				return b.String(), s[i+1:], b.Len() > 0
			}
			b.WriteByte(s[i])
		}
		return "", "", false
	}
	end := strings.IndexFunc(s, func(r rune) bool { return r == '.' || r == ';' || r == ' ' || r == '\t' || r == '\r' || r == '\n' })
	if end < 0 {
		end = len(s)
	}
	return s[:end], s[end:], end > 0
}
