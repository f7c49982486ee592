package mysqlsource

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
