package mysqlsource

import (
	"slices"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// renames pairs the column names of a row image (names, binlog_row_metadata=FULL) that the
// table no longer has with the current columns the image lacks, gap by gap between the names
// both share: in a gap where as many names left as came, the k-th old name is taken for a
// rename to the k-th new one (ALTER TABLE … RENAME COLUMN or CHANGE keep a column's place). A
// column added at the end, or anywhere with no name gone beside it, pairs with nothing. When
// the shared names are in another order (a column moved), nothing is paired.
func renames(names []string, cols []column) map[string]string {
	if len(names) == 0 {
		return nil
	}
	current := make(map[string]int, len(cols))
	for i, c := range cols {
		current[c.Name] = i
	}
	inImage := make(map[string]bool, len(names))
	for _, n := range names {
		inImage[n] = true
	}
	var out map[string]string
	var gone, came []string
	pair := func() {
		if len(gone) == len(came) {
			for k := range gone {
				if out == nil {
					out = map[string]string{}
				}
				out[gone[k]] = came[k]
			}
		}
		gone, came = gone[:0], came[:0]
	}
	next := 0 // the next current column not yet passed
	for _, n := range names {
		at, ok := current[n]
		if !ok {
			gone = append(gone, n)
			continue
		}
		if at < next {
			return nil
		}
		for ; next < at; next++ {
			if !inImage[cols[next].Name] {
				came = append(came, cols[next].Name)
			}
		}
		next = at + 1
		pair()
	}
	for ; next < len(cols); next++ {
		if !inImage[cols[next].Name] {
			came = append(came, cols[next].Name)
		}
	}
	pair()
	return out
}

// checkImage fails when the row images of a rows event of spec's table lack a column the index
// needs: the key, the delete column, a dimension's column or one of a non-nullable type. That
// is a column renamed or dropped on the server still named in index.tables: applied, the image
// would store zeros and move rows under wrong keys, so the stream stops before it (and retries
// from the recorded position until index.tables names the current column). n is the event's
// column count; names its column names if logged; renamed as renames returns.
func checkImage(spec index.TableSpec, n int, cols []column, names []string, renamed map[string]string) error {
	has := make(map[string]bool, len(cols)+len(renamed))
	if len(names) > 0 {
		for _, c := range names {
			has[c] = true
		}
		for _, c := range renamed {
			has[c] = true
		}
	} else {
		for _, c := range cols[:min(n, len(cols))] {
			has[c.Name] = true
		}
	}
	var missing []string
	need := func(c string) {
		if c != "" && !has[c] && !slices.Contains(missing, c) {
			missing = append(missing, c)
		}
	}
	need(spec.Key)
	need(spec.DeleteColumn)
	for _, d := range spec.Dimensions {
		for _, p := range d {
			need(p.Column)
		}
	}
	for _, c := range spec.Columns {
		if _, nullable := c.Type.Base(); !nullable {
			need(c.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return redstate.Errorf(redstate.EINVALID,
		"mysql source: rows of %s.%s have no column %s, declared in index.tables (renamed or dropped on the server?): "+
			"name the current column in index.tables (field: keeps the stored name) and restart; the stream resumes from the last applied position",
		spec.DB, spec.Table, strings.Join(missing, ", "))
}
