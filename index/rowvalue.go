package index

import "strings"

// A row's version key (fil-) holds, in layout 2, everything the apply script reads about the
// row, so that applying a change reads and writes one row key:
//
//	<version>|<change time>|<relation>
//
// relation lists the index keys the row is in, each without the table's prefix
// (Keys.TablePrefix) and separated by '|': "las-72:cat-870:bra-3987|las-72:cat-870". A
// tombstone's relation is empty ("<version>|<time>|"). None of the three parts can hold a '|':
// versions are letters and hex digits (Indexer.Apply refuses a version with a '|'), the change
// time is RFC 3339, and an index key's parts are codes ([A-Za-z0-9_]), '-', ':' and escaped
// values ([A-Za-z0-9._-], '%' and '~'). So the version is the text before the first '|' and
// compares as it did in layout 1, whose value was "<version>|<change time>" (two parts: the
// relation was in the kid- key); a value with a second '|' is of layout 2.

// relationSep separates the index keys of a relation, and the parts of a RowValue.
const relationSep = "|"

// RowValue is a version key's value of layout 2: version, change time and relation (an
// EncodeRelation).
func RowValue(v Version, stamp, relation string) string {
	return string(v) + relationSep + stamp + relationSep + relation
}

// EncodeRelation lists keys, each starting with tablePrefix (Keys.TablePrefix), for a
// RowValue.
func EncodeRelation(tablePrefix string, keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(relationSep)
		}
		b.WriteString(strings.TrimPrefix(k, tablePrefix))
	}
	return b.String()
}

// DecodeRelation returns the index keys a relation (EncodeRelation) lists.
func DecodeRelation(tablePrefix, relation string) []string {
	if relation == "" {
		return nil
	}
	parts := strings.Split(relation, relationSep)
	for i, p := range parts {
		parts[i] = tablePrefix + p
	}
	return parts
}

// ParseRowValue splits a version key's value into its version, change time and relation;
// layout2 is false for a value of layout 1 ("<version>|<change time>", its relation in the kid-
// key), whose relation is then "".
func ParseRowValue(value string) (v Version, stamp, relation string, layout2 bool) {
	version, rest, _ := strings.Cut(value, relationSep)
	stamp, relation, layout2 = strings.Cut(rest, relationSep)
	return Version(version), stamp, relation, layout2
}
