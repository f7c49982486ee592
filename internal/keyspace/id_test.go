package keyspace

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// No identifier that passes the rule can carry a hash-tag brace, a glob metacharacter, a
// backslash, whitespace or a control character into a key, whatever the punctuation set.
func TestInvalidIDByte_NeverAdmitsKeySyntax(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.String().Draw(t, "id")
		for _, punct := range []string{NamePunct, TokenPunct, TablePunct, WordPunct} {
			if InvalidIDByte(id, punct) >= 0 {
				continue
			}
			if strings.ContainsAny(id, "{}*?[]\\ \t\r\n") || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
				t.Fatalf("InvalidIDByte(%q, %q) admits it", id, punct)
			}
		}
	})
}

func TestInvalidIDByte(t *testing.T) {
	cases := []struct {
		id, punct string
		want      int
	}{
		{"tenant-1.a_b:c", NamePunct, -1},
		{"tenant-1.a_b:c", TokenPunct, 8},
		{"abc{x}", NamePunct, 3},
		{"a*", NamePunct, 1},
		{"é", NamePunct, 0},
		{"", NamePunct, -1},
		{"A9_-", TokenPunct, -1},
	}
	for _, c := range cases {
		if got := InvalidIDByte(c.id, c.punct); got != c.want {
			t.Errorf("InvalidIDByte(%q, %q) = %d, want %d", c.id, c.punct, got, c.want)
		}
	}
}

func TestValidID(t *testing.T) {
	cases := []struct {
		id   string
		max  int
		want bool
	}{
		{"orders", 64, true},
		{"", 64, false},
		{strings.Repeat("a", 64), 64, true},
		{strings.Repeat("a", 65), 64, false},
		{"my$table.v2", 64, true},
		{"a b", 64, false},
	}
	for _, c := range cases {
		if got := ValidID(c.id, c.max, TablePunct); got != c.want {
			t.Errorf("ValidID(%q, %d, TablePunct) = %v, want %v", c.id, c.max, got, c.want)
		}
	}
}
