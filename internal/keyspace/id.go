package keyspace

import "strings"

// The punctuation sets of identifiers that go into keys verbatim (IDByte's punct). Neither
// holds a hash-tag brace, a glob metacharacter, a backslash or whitespace, so such an
// identifier can neither set its own Cluster slot nor widen a SCAN pattern.
const (
	// NamePunct is the punctuation of names and ids: executor ids, queue names, consumer ids
	// and key prefixes.
	NamePunct = "._:-"
	// TokenPunct is the punctuation of tokens: throughput batch ids and the job ids a queue
	// puts into its marker keys as they are.
	TokenPunct = "_-"
	// TablePunct is the punctuation of the database and table names of the CDC index.
	TablePunct = "_$.-"
	// WordPunct is the punctuation of the CDC index's segment codes.
	WordPunct = "_"
)

// IDByte reports whether c may appear in an identifier that goes into a key verbatim: an
// ASCII letter, a digit or a byte of punct (one of the sets above).
func IDByte(c byte, punct string) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte(punct, c) >= 0
}

// InvalidIDByte returns the index of the first byte of id that IDByte refuses, or -1 when
// there is none. It is the one character rule of every identifier a block puts into keys
// unescaped; each block checks the length and words the error itself (its messages are part
// of its contract). Free text goes through EscapeSegment instead.
func InvalidIDByte(id, punct string) int {
	for i := 0; i < len(id); i++ {
		if !IDByte(id[i], punct) {
			return i
		}
	}
	return -1
}

// ValidID reports whether id is 1..maxLen bytes that IDByte accepts.
func ValidID(id string, maxLen int, punct string) bool {
	return id != "" && len(id) <= maxLen && InvalidIDByte(id, punct) < 0
}
