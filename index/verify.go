package index

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	// Rows is how many source rows were compared (logically deleted ones included).
	Rows int `json:"rows"`
	// Missing counts (index key, row) entries the source implies and Redis lacks; Stale ones
	// Redis holds with other content; Extra ones Redis holds and the source does not imply.
	Missing int `json:"missing"`
	Stale   int `json:"stale"`
	Extra   int `json:"extra"`
	// Repaired counts the entries fixed (with repair).
	Repaired int `json:"repaired"`
	// Examples describe the first differences (at most 20).
	Examples []string `json:"examples,omitempty"`
}

// Clean reports whether nothing differed.
func (r VerifyReport) Clean() bool { return r.Missing+r.Stale+r.Extra == 0 }

// RowSource yields a table's current rows (column → text value) to f until f returns false
// or the rows end.
type RowSource func(f func(row map[string]*string) bool) error

// Verify compares db.tbl's index with the rows of source, their values written as enc says
// (EncodingText for the MySQL source's rows, EncodingPostgres for PostgreSQL's row_to_json,
// EncodingNative for a JSONL snapshot): every index entry a row implies
// must be there with the row's content, and no other entry may be. With repair, every
// differing row is rewritten with a version just above the one the index held when Verify
// read it (so a later real change still wins) and every extra entry removed. progress, if set,
// is called with the rows read so far. Errors: ENOTFOUND (undeclared table), EINVALID (a row
// that cannot be converted), EUNAVAILABLE.
//
// The index is read before the source, so Verify may run while the stream is applied: a change
// applied before the index was read was committed before the source was read, so the source's
// row is at least as new as what the index held; and a rewrite is a version compare-and-set
// against that version, so a change applied since (newer than what the source gave, or on its
// way to it) is kept, never put back to the source's read.
func (ix *Indexer) Verify(ctx context.Context, db, tbl string, source RowSource, enc Encoding, repair bool, progress func(rows int)) (VerifyReport, error) {
	t, err := ix.table(db, tbl)
	if err != nil {
		return VerifyReport{}, err
	}
	dump, err := ix.store.Dump(ctx, t.keys.Pattern())
	if err != nil {
		return VerifyReport{}, err
	}
	var rep VerifyReport
	want := map[string]map[string]string{} // index key → id → row JSON
	rowsByID := map[string]map[string]*string{}
	var convErr error
	err = source(func(row map[string]*string) bool {
		rep.Rows++
		if progress != nil && rep.Rows%1000 == 0 {
			progress(rep.Rows)
		}
		w, err := ix.write(t, Change{DB: db, Table: tbl, Op: OpUpsert, Row: row, Version: "v", Encoding: enc})
		if err != nil {
			convErr = err
			return false
		}
		if w.Delete {
			return true
		}
		rowsByID[w.ID] = row
		for _, k := range w.Keys {
			if want[k] == nil {
				want[k] = map[string]string{}
			}
			want[k][w.ID] = string(w.Row)
		}
		return true
	})
	if progress != nil {
		progress(rep.Rows)
	}
	if err != nil {
		return rep, err
	}
	if convErr != nil {
		return rep, convErr
	}
	have := map[string]map[string]string{}
	for k, v := range dump {
		body, ok := strings.CutPrefix(v, "hash:")
		if !ok {
			continue
		}
		have[k] = parseCanonicalHash(body)
	}
	note := func(format string, args ...any) {
		if len(rep.Examples) < 20 {
			rep.Examples = append(rep.Examples, fmt.Sprintf(format, args...))
		}
	}
	fix := map[string]bool{}
	for k, ids := range want {
		for id, row := range ids {
			got, ok := have[k][id]
			switch {
			case !ok:
				rep.Missing++
				note("missing: %s in %s", id, k)
				fix[id] = true
			case !sameJSON(got, row):
				rep.Stale++
				note("stale: %s in %s", id, k)
				fix[id] = true
			}
		}
	}
	type entry struct{ key, id string }
	var extras []entry
	for k, ids := range have {
		for id := range ids {
			if _, ok := want[k][id]; !ok {
				rep.Extra++
				note("extra: %s in %s", id, k)
				extras = append(extras, entry{k, id})
				if rowsByID[id] != nil {
					fix[id] = true
				}
			}
		}
	}
	if !repair {
		return rep, nil
	}
	for _, e := range extras {
		if rowsByID[e.id] == nil {
			fix[e.id] = true // not in the source: deleted (a tombstone at the repair version)
		}
	}
	// A rewrite must also be newer than the table's last truncate, below which nothing applies.
	floor, _, _ := strings.Cut(strings.TrimPrefix(dump[t.floorKey], "string:"), "|")
	for id := range fix {
		seen, _, _ := strings.Cut(strings.TrimPrefix(dump[t.keys.Version(id)], "string:"), "|")
		applied, err := ix.repairRow(ctx, t, db, tbl, id, rowsByID[id], enc, max(seen, floor))
		if err != nil {
			return rep, err
		}
		if applied {
			rep.Repaired++
		}
	}
	// An extra entry its row's relation did not list survives the rewrite: remove it. One the
	// relation listed was removed by the rewrite, or by a newer change, which may also have put
	// the row back there: it is left alone.
	for _, e := range extras {
		if t.listed(dump, e.id, e.key) {
			continue
		}
		rows, err := ix.store.Rows(FreshRead(ctx), e.key)
		if err != nil {
			return rep, err
		}
		if _, still := rows[e.id]; still {
			if err := ix.store.Remove(ctx, e.key, e.id); err != nil {
				return rep, err
			}
			rep.Repaired++
		}
	}
	return rep, nil
}

// repairRow rewrites row id (nil row: deletes it; its values written as enc says) with a
// version just above seen, the version the index held when Verify read it (or the table's
// truncate, if newer): seen plus "r" sorts after it and before every later real version
// (versions of one kind have a fixed width). Without one it writes "0", below every real
// version, so any later change wins. The store applies it only if nothing newer was applied
// since; applied reports whether it did.
func (ix *Indexer) repairRow(ctx context.Context, t *table, db, tbl, id string, row map[string]*string, enc Encoding, seen string) (applied bool, err error) {
	version := Version("0")
	if seen != "" {
		version = Version(seen + "r")
	}
	ch := Change{DB: db, Table: tbl, Op: OpUpsert, Row: row, Version: version, Time: time.Now(), Encoding: enc}
	if row == nil { // id is the index's: a bytes key in its standard base64, a native event's form
		ch.Op, ch.Row, ch.Encoding = OpDelete, map[string]*string{t.spec.Key: &id}, EncodingNative
	}
	w, err := ix.write(t, ch)
	if err != nil {
		return false, err
	}
	out, err := ix.store.Apply(ctx, []RowWrite{w})
	if err != nil {
		return false, err
	}
	return out[0] == Applied, nil
}

// listed reports whether the relation of row id in dump (the table's Dump) lists key: the one
// in its version key's value, or, for a row still of layout 1, its kid- key's.
func (t *table) listed(dump map[string]string, id, key string) bool {
	_, _, relation, layout2 := ParseRowValue(strings.TrimPrefix(dump[t.keys.Version(id)], "string:"))
	if layout2 {
		return slices.Contains(DecodeRelation(t.keys.TablePrefix(), relation), key)
	}
	var keys []string
	legacy := strings.TrimPrefix(dump[t.keys.LegacyRelation(id)], "string:")
	return json.Unmarshal([]byte(legacy), &keys) == nil && slices.Contains(keys, key)
}

// sameJSON compares two JSON texts by value.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
