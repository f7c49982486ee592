package keyspace

import (
	"fmt"
	"strings"
	"unicode"
)

// CheckPrefix checks a configured key prefix or namespace: it goes into every key and SCAN
// pattern, so it must not hold whitespace, control characters, glob characters or hash-tag
// braces.
func CheckPrefix(s string) error {
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`*?[]\{}`, r)
	}); i >= 0 {
		return fmt.Errorf("%q contains %q; whitespace, control characters, glob characters (* ? [ ] \\) and braces ({ }) are not allowed", s, s[i:i+1])
	}
	return nil
}
