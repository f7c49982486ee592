package indextest

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/redstate/redstate/index"
)

// MinPropertyChecks is the least number of random histories RunPropertySuite checks.
const MinPropertyChecks = 200

// RunPropertySuite checks the index's central invariant with random histories: random
// insert/update/delete/logical-delete/truncate sequences over random rows and condition values,
// delivered shuffled, with duplicates and in random batches, end in exactly the content that
// in-order delivery gives — every key under the table's prefix, compared byte for byte, but the
// version keys at or below the table's truncate (a row's tombstone that in order the truncate
// wrote, and that shuffled never exists because the row's older changes came after the
// truncate and were stale: both say "nothing newer than the truncate").
// It runs at least MinPropertyChecks cases (more with -rapid.checks).
func RunPropertySuite(t *testing.T, newStore NewStore, f Features) {
	if fl := flag.Lookup("rapid.checks"); fl != nil {
		if n, err := strconv.Atoi(fl.Value.String()); err == nil && n < MinPropertyChecks {
			_ = fl.Value.Set(strconv.Itoa(MinPropertyChecks))
		}
	}
	store := newStore(t)
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		ids := rapid.IntRange(1, 4).Draw(rt, "rows")
		n := rapid.IntRange(1, 24).Draw(rt, "changes")
		var history []index.Change
		for v := 1; v <= n; v++ {
			id := rapid.IntRange(1, ids).Draw(rt, "id")
			switch rapid.IntRange(0, 6).Draw(rt, "op") {
			case 0:
				history = append(history, del(uint64(v), id))
			case 6:
				history = append(history, truncate(uint64(v)))
			case 1:
				r := row(id, 1, 1, 1, "gone")
				r["yn"] = index.Str("0")
				history = append(history, upsert(uint64(v), r))
			default:
				las, cat := rapid.IntRange(1, 3).Draw(rt, "las"), rapid.IntRange(1, 3).Draw(rt, "cat")
				history = append(history, upsert(uint64(v), row(id, las, cat, rapid.IntRange(0, 2).Draw(rt, "bra"), fmt.Sprintf("v%d", v))))
			}
		}
		delivered := rapid.Permutation(history).Draw(rt, "order")
		for _, i := range rapid.SliceOfN(rapid.IntRange(0, n-1), 0, n).Draw(rt, "duplicates") {
			delivered = append(delivered, history[i])
		}
		delivered = rapid.Permutation(delivered).Draw(rt, "shuffled")

		inOrder := newPropertyIndexer(rt, store, f)
		shuffled := newPropertyIndexer(rt, store, f)
		if _, err := inOrder.Apply(ctx, history); err != nil {
			rt.Fatal(err)
		}
		for len(delivered) > 0 {
			size := rapid.IntRange(1, 5).Draw(rt, "batch")
			if size > len(delivered) {
				size = len(delivered)
			}
			if _, err := shuffled.Apply(ctx, delivered[:size]); err != nil {
				rt.Fatal(err)
			}
			delivered = delivered[size:]
		}
		want, got := dumpStripped(rt, store, inOrder), dumpStripped(rt, store, shuffled)
		if len(want) != len(got) {
			rt.Fatalf("in order: %d keys, shuffled: %d keys\nwant %v\ngot  %v", len(want), len(got), want, got)
		}
		for k, v := range want {
			if got[k] != v {
				rt.Fatalf("key %s: in order %q, shuffled %q", k, v, got[k])
			}
		}
	})
}

func newPropertyIndexer(rt *rapid.T, store index.Store, f Features) *index.Indexer {
	ix, err := index.New(store, []index.TableSpec{SeedTable(f.Cluster)}, index.Options{Prefix: UniquePrefix(), Cluster: f.Cluster})
	if err != nil {
		rt.Fatal(err)
	}
	return ix
}

// dumpStripped dumps the table's keys with the indexer's own prefix removed from keys and
// from relation values, so two indexers' contents compare directly.
func dumpStripped(rt *rapid.T, store index.Store, ix *index.Indexer) map[string]string {
	keys, _ := ix.Keys("db1", "table1")
	dump, err := store.Dump(context.Background(), keys.Pattern())
	if err != nil {
		rt.Fatal(err)
	}
	base := strings.TrimSuffix(keys.Pattern(), ":*")
	floor, _, _ := strings.Cut(strings.TrimPrefix(dump[keys.Truncated()], "string:"), "|")
	out := make(map[string]string, len(dump))
	for k, v := range dump {
		if _, isVersion := keys.VersionID(k); isVersion && floor != "" {
			if version, _, _ := strings.Cut(strings.TrimPrefix(v, "string:"), "|"); version <= floor {
				continue // at or below the truncate: equivalent to no version key
			}
		}
		out[strings.TrimPrefix(k, base)] = strings.ReplaceAll(v, base, "")
	}
	return out
}
