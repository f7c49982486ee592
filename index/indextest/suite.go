// Package indextest is the conformance suite of index.Store: every backend's tests call
// RunStoreSuite (and RunPropertySuite), so memory, standalone Redis and Redis Cluster are held
// to the same semantics through the Indexer that drives them.
package indextest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// NewStore returns the store under test (the same instance is fine: every test uses its own
// key prefix).
type NewStore func(t *testing.T) index.Store

// Features say what the backend under test is.
type Features struct {
	// Cluster: the store is a Redis Cluster (tables need HashTag).
	Cluster bool
}

// SeedTable is the seed's example table: db1.table1 keyed by id, logical delete column yn,
// indexed by las (lastAddrId), cat (categoryId) and bra (brandId), and by las+cat.
func SeedTable(hashTag bool) index.TableSpec {
	return index.TableSpec{
		DB: "db1", Table: "table1", Key: "id", DeleteColumn: "yn", HashTag: hashTag,
		Columns: []index.Column{
			{Name: "id", Type: index.TypeLong}, {Name: "provinceId", Type: index.TypeInt},
			{Name: "cityId", Type: index.TypeInt}, {Name: "lastAddrId", Type: index.TypeInt},
			{Name: "categoryId", Type: index.TypeInt}, {Name: "brandId", Type: "int?"},
			{Name: "name", Type: "string?"},
		},
		Dimensions: [][]index.Part{
			{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}, {Code: "bra", Column: "brandId"}},
			{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}},
		},
	}
}

// UniquePrefix returns a fresh key prefix.
func UniquePrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// newIndexer returns an Indexer over store for the seed table under a fresh prefix.
func newIndexer(t *testing.T, store index.Store, f Features) *index.Indexer {
	t.Helper()
	ix, err := index.New(store, []index.TableSpec{SeedTable(f.Cluster)}, index.Options{Prefix: UniquePrefix(), Cluster: f.Cluster})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// row builds a seed-table change row.
func row(id, las, cat, bra int, name string) map[string]*string {
	r := map[string]*string{
		"id": index.Str(fmt.Sprint(id)), "provinceId": index.Str("1"), "cityId": index.Str("72"),
		"lastAddrId": index.Str(fmt.Sprint(las)), "categoryId": index.Str(fmt.Sprint(cat)),
		"brandId": index.Str(fmt.Sprint(bra)), "name": index.Str(name), "yn": index.Str("1"),
	}
	return r
}

// upsert and del build changes of the seed table at version v (a PostgreSQL-style version).
func upsert(v uint64, r map[string]*string) index.Change {
	return index.Change{DB: "db1", Table: "table1", Op: index.OpUpsert, Row: r, Version: index.PostgresVersion(v, v), Time: time.Unix(int64(v), 0)}
}

func del(v uint64, id int) index.Change {
	return index.Change{DB: "db1", Table: "table1", Op: index.OpDelete, Row: map[string]*string{"id": index.Str(fmt.Sprint(id))}, Version: index.PostgresVersion(v, v),
		Time: time.Unix(int64(v), 0)}
}

// truncate builds a truncate of the seed table at version v.
func truncate(v uint64) index.Change {
	return index.Change{DB: "db1", Table: "table1", Op: index.OpTruncate, Version: index.PostgresVersion(v, v), Time: time.Unix(int64(v), 0)}
}

// apply applies changes and fails the test on an error.
func apply(t *testing.T, ix *index.Indexer, changes ...index.Change) index.Result {
	t.Helper()
	res, err := ix.Apply(context.Background(), changes)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

// query returns the ids matching conds.
func query(t *testing.T, ix *index.Indexer, conds map[string]string) map[string]json.RawMessage {
	t.Helper()
	rows, err := ix.Query(context.Background(), "db1", "table1", conds)
	if err != nil {
		t.Fatalf("Query(%v): %v", conds, err)
	}
	return rows
}

func lcb(las, cat, bra int) map[string]string {
	return map[string]string{"las": fmt.Sprint(las), "cat": fmt.Sprint(cat), "bra": fmt.Sprint(bra)}
}

func lc(las, cat int) map[string]string {
	return map[string]string{"las": fmt.Sprint(las), "cat": fmt.Sprint(cat)}
}

// RunStoreSuite runs every conformance test against the store newStore returns.
func RunStoreSuite(t *testing.T, newStore NewStore, f Features) {
	ctx := context.Background()
	tests := map[string]func(t *testing.T){
		"ApplyAndQuery": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			res := apply(t, ix, upsert(1, row(10001, 72, 870, 3987, "a")))
			if res.Applied != 1 {
				t.Fatalf("result %+v", res)
			}
			rows := query(t, ix, lcb(72, 870, 3987))
			var got map[string]any
			if err := json.Unmarshal(rows["10001"], &got); err != nil || got["lastAddrId"] != float64(72) || got["name"] != "a" {
				t.Fatalf("row = %s (%v)", rows["10001"], err)
			}
			if len(query(t, ix, map[string]string{"cat": "870", "las": "72"})) != 1 {
				t.Fatal("second combination (any order of codes) misses the row")
			}
		},
		"UpdateMovesRowWithoutBeforeImage": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			apply(t, ix, upsert(1, row(1, 72, 870, 1, "a")), upsert(2, row(2, 72, 870, 1, "b")))
			apply(t, ix, upsert(3, row(1, 72, 999, 1, "a2"))) // categoryId changed; no old values sent
			if rows := query(t, ix, lcb(72, 870, 1)); len(rows) != 1 || rows["2"] == nil {
				t.Fatalf("old key = %v, want only row 2", keysOf(rows))
			}
			if rows := query(t, ix, lc(72, 999)); len(rows) != 1 || !strings.Contains(string(rows["1"]), `"a2"`) {
				t.Fatalf("new key = %v", rows)
			}
		},
		"StaleAndDuplicateSkipped": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			apply(t, ix, upsert(5, row(1, 72, 870, 1, "v5")))
			res := apply(t, ix, upsert(3, row(1, 72, 111, 1, "v3")), upsert(5, row(1, 72, 870, 1, "v5")))
			if res.Stale != 2 || res.Applied != 0 {
				t.Fatalf("older and duplicate: %+v", res)
			}
			if rows := query(t, ix, lc(72, 111)); len(rows) != 0 {
				t.Fatal("a stale change reached the index")
			}
			if rows := query(t, ix, lc(72, 870)); !strings.Contains(string(rows["1"]), `"v5"`) {
				t.Fatalf("row = %s", rows["1"])
			}
		},
		"DeleteLeavesTombstone": func(t *testing.T) {
			store := newStore(t)
			ix := newIndexer(t, store, f)
			keys, _ := ix.Keys("db1", "table1")
			apply(t, ix, upsert(1, row(1, 72, 870, 1, "a")), del(3, 1))
			if rows := query(t, ix, lc(72, 870)); len(rows) != 0 {
				t.Fatal("deleted row still indexed")
			}
			dump, err := store.Dump(ctx, keys.Pattern())
			if err != nil {
				t.Fatal(err)
			}
			if v, want := dump[keys.Version("1")], "string:"+string(index.PostgresVersion(3, 3))+"|"; !strings.HasPrefix(v, want) || !strings.HasSuffix(v, "|") {
				t.Errorf("tombstone = %q, want %s<time>| (no relation)", v, want)
			}
			if res := apply(t, ix, upsert(2, row(1, 72, 870, 1, "late"))); res.Stale != 1 {
				t.Fatalf("late insert: %+v (resurrected?)", res)
			}
			if rows := query(t, ix, lc(72, 870)); len(rows) != 0 {
				t.Fatal("a late insert resurrected a deleted row")
			}
			if res := apply(t, ix, upsert(4, row(1, 72, 870, 1, "again"))); res.Applied != 1 || len(query(t, ix, lc(72, 870))) != 1 {
				t.Fatalf("newer insert after delete: %+v", res)
			}
		},
		"VersionKeyAlwaysHoldsATime": func(t *testing.T) {
			store := newStore(t)
			ix := newIndexer(t, store, f)
			keys, _ := ix.Keys("db1", "table1")
			timed, untimed := upsert(1, row(1, 72, 870, 1, "a")), upsert(1, row(2, 72, 870, 1, "b"))
			untimed.Time = time.Time{} // a source that gives no change time
			before := time.Now().Add(-time.Second)
			apply(t, ix, timed, untimed)
			dump, err := store.Dump(ctx, keys.Pattern())
			if err != nil {
				t.Fatal(err)
			}
			if v := dump[keys.Version("1")]; v != "string:"+index.RowValue(timed.Version, "1970-01-01T00:00:01Z", "las-72:cat-870:bra-1|las-72:cat-870") {
				t.Errorf("version key of a timed change = %q, want its change time and relation", v)
			}
			_, stamp, _, _ := index.ParseRowValue(strings.TrimPrefix(dump[keys.Version("2")], "string:"))
			if at, err := time.Parse(time.RFC3339Nano, stamp); err != nil || at.Before(before) {
				t.Errorf("version key of an untimed change = %q, want the time it was applied", dump[keys.Version("2")])
			}
		},
		"LogicalDelete": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			r0, rNull, rAbsent := row(1, 1, 1, 1, "x"), row(2, 1, 1, 1, "y"), row(3, 1, 1, 1, "z")
			apply(t, ix, upsert(1, r0), upsert(1, rNull), upsert(1, rAbsent))
			r0["yn"], rNull["yn"] = index.Str("0"), nil
			delete(rAbsent, "yn")
			apply(t, ix, upsert(2, r0), upsert(2, rNull), upsert(2, rAbsent))
			if rows := query(t, ix, lc(1, 1)); len(rows) != 1 || rows["3"] == nil {
				t.Fatalf("after yn=0, yn=NULL, yn absent: %v; want only row 3", keysOf(rows))
			}
		},
		"EscapedValues": func(t *testing.T) {
			spec := SeedTable(f.Cluster)
			spec.Columns[3].Type, spec.Columns[4].Type = index.TypeString, index.TypeString
			ix2, err := index.New(newStore(t), []index.TableSpec{spec}, index.Options{Prefix: UniquePrefix(), Cluster: f.Cluster})
			if err != nil {
				t.Fatal(err)
			}
			r := row(1, 0, 0, 1, "x")
			r["lastAddrId"], r["categoryId"] = index.Str("a:b*"), index.Str("{c} d")
			r2 := row(2, 0, 0, 1, "y")
			r2["lastAddrId"], r2["categoryId"] = index.Str("a"), index.Str("b*:{c} d")
			apply(t, ix2, upsert(1, r), upsert(1, r2))
			rows, err := ix2.Query(ctx, "db1", "table1", map[string]string{"las": "a:b*", "cat": "{c} d"})
			if err != nil || len(rows) != 1 || rows["1"] == nil {
				t.Fatalf("escaped query = %v, %v; want only row 1", keysOf(rows), err)
			}
			key, _ := ix2.QueryKey("db1", "table1", map[string]string{"las": "a:b*", "cat": "{c} d"})
			if !strings.HasSuffix(key, ":las-a%3Ab%2A:cat-%7Bc%7D%20d") {
				t.Fatalf("key %q is not escaped", key)
			}
		},
		"ConversionErrorDeadLetteredOthersApplied": func(t *testing.T) {
			store := newStore(t)
			ix := newIndexer(t, store, f)
			bad := row(1, 72, 870, 1, "bad")
			bad["cityId"] = index.Str("seventy-two")
			noKey := row(3, 72, 870, 1, "nokey")
			delete(noKey, "id")
			res := apply(t, ix, upsert(1, bad), upsert(1, row(2, 72, 870, 1, "good")), upsert(1, noKey),
				index.Change{DB: "db1", Table: "other", Op: index.OpUpsert, Row: row(9, 1, 1, 1, ""), Version: "p1"})
			if res.Failed != 2 || res.Applied != 1 || res.Skipped != 1 || len(res.Errors) != 2 || !strings.Contains(res.Errors[0], "cityId") {
				t.Fatalf("result %+v", res)
			}
			dump, err := store.Dump(ctx, ix.DeadLetterKey())
			if err != nil || dump[ix.DeadLetterKey()] != "list:2" {
				t.Fatalf("dead letters = %v, %v", dump, err)
			}
		},
		"CountersAreSharedByInstances": func(t *testing.T) {
			// Two indexers on one store and prefix stand for two instances.
			store, prefix := newStore(t), UniquePrefix()
			instance := func() *index.Indexer {
				ix, err := index.New(store, []index.TableSpec{SeedTable(f.Cluster)}, index.Options{Prefix: prefix, Cluster: f.Cluster})
				if err != nil {
					t.Fatal(err)
				}
				return ix
			}
			a, b := instance(), instance()
			bad := row(3, 72, 870, 1, "bad")
			bad["cityId"] = index.Str("x")
			apply(t, a, upsert(2, row(1, 72, 870, 1, "a")), upsert(1, row(1, 72, 870, 1, "old")), upsert(1, row(2, 72, 870, 1, "b")), upsert(1, bad),
				index.Change{DB: "db1", Table: "other", Op: index.OpUpsert, Row: row(9, 1, 1, 1, ""), Version: "p1"})
			a.CountUnreadable(2)
			apply(t, b, upsert(1, row(5, 72, 870, 1, "c")))
			shared := func(ix *index.Indexer) index.CounterSet {
				t.Helper()
				c, err := ix.SharedCounters(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			table := index.TableRef{DB: "db1", Table: "table1"}
			if c := shared(b); c.Tables[table] != (index.Counters{Applied: 1}) || c.Skipped != 0 {
				t.Fatalf("b before any flush = %+v, want only its own unflushed counts", c)
			}
			for range 2 { // the second flush has nothing to add
				for _, ix := range []*index.Indexer{a, b} {
					if err := ix.FlushCounters(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := index.CounterSet{Tables: map[index.TableRef]index.Counters{table: {Applied: 3, Stale: 1, Failed: 1}}, Skipped: 1, Unreadable: 2}
			for name, ix := range map[string]*index.Indexer{"a": a, "b": b} {
				if c := shared(ix); !reflect.DeepEqual(c, want) {
					t.Fatalf("%s after the flushes = %+v, want %+v", name, c, want)
				}
			}
			if a.Skipped() != 1 || a.Unreadable() != 2 || b.Skipped() != 0 {
				t.Fatalf("per-instance counts: a skipped %d unreadable %d, b skipped %d", a.Skipped(), a.Unreadable(), b.Skipped())
			}
		},
		"AddCountersConcurrently": func(t *testing.T) {
			store, key := newStore(t), UniquePrefix()+":counters"
			dotted := index.TableRef{DB: "a.b", Table: "c-d"} // names may hold '.' and '-'
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 25 {
						if err := store.AddCounters(ctx, key, index.CounterSet{Tables: map[index.TableRef]index.Counters{dotted: {Applied: 1, Failed: 2}}, Skipped: 1}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			c, err := store.Counters(ctx, key)
			if err != nil || c.Tables[dotted] != (index.Counters{Applied: 200, Failed: 400}) || c.Skipped != 200 || len(c.Tables) != 1 {
				t.Fatalf("counters = %+v, %v; want 200 applied, 400 failed, 200 skipped", c, err)
			}
			if c, err := store.Counters(ctx, UniquePrefix()+":counters"); err != nil || len(c.Tables) != 0 || c.Skipped != 0 {
				t.Fatalf("counters of a missing key = %+v, %v", c, err)
			}
		},
		"SameRowTwiceInOneBatch": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			apply(t, ix, upsert(1, row(1, 1, 1, 1, "a")), upsert(2, row(1, 2, 2, 2, "b")), upsert(3, row(1, 3, 3, 3, "c")))
			if len(query(t, ix, lc(1, 1))) != 0 || len(query(t, ix, lc(2, 2))) != 0 || len(query(t, ix, lc(3, 3))) != 1 {
				t.Fatal("a row is in more than its last key")
			}
		},
		"QueryErrors": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			_, err := ix.Query(ctx, "db1", "table1", map[string]string{"bra": "1"})
			if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), "las+cat+bra, las+cat") {
				t.Fatalf("unknown combination: %v", err)
			}
			if _, err := ix.Query(ctx, "db1", "nope", lc(1, 1)); !redstate.IsCode(err, redstate.ENOTFOUND) {
				t.Fatalf("undeclared table: %v", err)
			}
		},
		"ScanAndBatch": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			var changes []index.Change
			for i := 1; i <= 250; i++ {
				changes = append(changes, upsert(1, row(i, 5, 5, i%2, "r")))
			}
			apply(t, ix, changes...)
			seen := map[string]bool{}
			cursor := ""
			for pages := 0; ; pages++ {
				p, err := ix.QueryPage(ctx, "db1", "table1", lc(5, 5), cursor, 100)
				if err != nil || pages > 100 {
					t.Fatalf("QueryPage: %v (pages %d)", err, pages)
				}
				for id := range p.Rows {
					seen[id] = true
				}
				if cursor = p.Cursor; cursor == "0" {
					break
				}
			}
			if len(seen) != 250 {
				t.Fatalf("scan saw %d rows, want 250", len(seen))
			}
			res, err := ix.QueryBatch(ctx, "db1", "table1", []map[string]string{lcb(5, 5, 0), lcb(5, 5, 1), lc(5, 5), lc(6, 6)})
			if err != nil || len(res) != 4 || len(res[0]) != 125 || len(res[1]) != 125 || len(res[2]) != 250 || len(res[3]) != 0 {
				t.Fatalf("QueryBatch = %d results, %v", len(res), err)
			}
		},
		"TruncateRemovesOlderRowsKeepsNewerBlocksLateOnes": func(t *testing.T) {
			store := newStore(t)
			ix := newIndexer(t, store, f)
			apply(t, ix, upsert(1, row(1, 1, 1, 1, "old")), upsert(2, row(2, 1, 1, 1, "old")), upsert(10, row(3, 1, 1, 1, "newer")),
				upsert(3, row(4, 1, 1, 1, "deleted")), del(4, 4))
			res := apply(t, ix, truncate(5))
			if res.Applied != 1 || res.Truncated != 3 { // rows 1, 2 and the tombstone of 4; row 3 is newer
				t.Fatalf("truncate: %+v", res)
			}
			if rows := query(t, ix, lc(1, 1)); len(rows) != 1 || rows["3"] == nil {
				t.Fatalf("after the truncate: %v, want only the newer row 3", keysOf(rows))
			}
			// A change from before the truncate, delivered after it, is stale: also for a row the
			// truncate never saw (no version key to tombstone).
			if res := apply(t, ix, upsert(4, row(5, 1, 1, 1, "late")), upsert(3, row(1, 1, 1, 1, "late"))); res.Stale != 2 {
				t.Fatalf("late changes: %+v", res)
			}
			// Delivered again, the truncate is stale and changes nothing; a newer change applies.
			if res := apply(t, ix, truncate(5), upsert(6, row(1, 2, 2, 2, "back"))); res.Stale != 1 || res.Applied != 1 || res.Truncated != 0 {
				t.Fatalf("redelivered truncate, newer change: %+v", res)
			}
			if rows := query(t, ix, lc(2, 2)); rows["1"] == nil {
				t.Fatalf("a change newer than the truncate did not apply: %v", keysOf(rows))
			}
			// In one call, the changes before a truncate are applied before it, those after it after.
			apply(t, ix, upsert(7, row(7, 3, 3, 3, "before")), truncate(8), upsert(9, row(8, 3, 3, 3, "after")))
			if rows := query(t, ix, lc(3, 3)); len(rows) != 1 || rows["8"] == nil {
				t.Fatalf("before/truncate/after in one call: %v", keysOf(rows))
			}
			keys, _ := ix.Keys("db1", "table1")
			dump, err := store.Dump(ctx, keys.Pattern())
			if err != nil || !strings.HasPrefix(dump[keys.Truncated()], "string:"+string(index.PostgresVersion(8, 8))+"|") {
				t.Fatalf("truncate key = %q, %v", dump[keys.Truncated()], err)
			}
		},
		"TruncateOfManyRows": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			var changes []index.Change
			for i := 1; i <= 1234; i++ {
				changes = append(changes, upsert(uint64(i), row(i, i%3, 1, 1, "r")))
			}
			apply(t, ix, changes...)
			if res := apply(t, ix, truncate(5000)); res.Truncated != 1234 {
				t.Fatalf("truncate: %+v", res)
			}
			for las := range 3 {
				if rows := query(t, ix, lc(las, 1)); len(rows) != 0 {
					t.Fatalf("las %d after the truncate: %d rows", las, len(rows))
				}
			}
		},
		"RepairAfterTruncate": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			apply(t, ix, upsert(1, row(1, 1, 1, 1, "a")), truncate(5))
			// The table holds a row the stream never delivered: the repair writes it above the
			// truncate (below which nothing applies), and a later real change still wins.
			rows := func(f func(map[string]*string) bool) error { f(row(2, 1, 1, 1, "b")); return nil }
			if rep, err := ix.Verify(ctx, "db1", "table1", rows, index.EncodingText, true, nil); err != nil || rep.Repaired != 1 {
				t.Fatalf("repair: %+v %v", rep, err)
			}
			if got := query(t, ix, lc(1, 1)); len(got) != 1 || got["2"] == nil {
				t.Fatalf("after the repair: %v", keysOf(got))
			}
			apply(t, ix, upsert(6, row(2, 2, 2, 2, "real")))
			if len(query(t, ix, lc(2, 2))) != 1 {
				t.Fatal("a change after the repair lost to the repair's version")
			}
		},
		"VerifyAndRepair": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			apply(t, ix, upsert(5, row(1, 1, 1, 1, "a")), upsert(5, row(2, 1, 1, 1, "b")), upsert(5, row(3, 2, 2, 2, "c")))
			source := []map[string]*string{row(1, 1, 1, 1, "a"), row(2, 1, 1, 1, "b-changed"), row(4, 3, 3, 3, "d")} // 2 stale, 3 extra, 4 missing
			rows := func(f func(map[string]*string) bool) error {
				for _, r := range source {
					if !f(r) {
						break
					}
				}
				return nil
			}
			rep, err := ix.Verify(ctx, "db1", "table1", rows, index.EncodingText, false, nil)
			if err != nil || rep.Rows != 3 || rep.Missing != 2 || rep.Stale != 2 || rep.Extra != 2 || rep.Clean() {
				t.Fatalf("Verify = %+v, %v", rep, err)
			}
			if rep, err = ix.Verify(ctx, "db1", "table1", rows, index.EncodingText, true, nil); err != nil || rep.Repaired == 0 {
				t.Fatalf("repair = %+v, %v", rep, err)
			}
			if rep, err = ix.Verify(ctx, "db1", "table1", rows, index.EncodingText, false, nil); err != nil || !rep.Clean() {
				t.Fatalf("after repair = %+v, %v", rep, err)
			}
			// A real change after the repair still wins.
			apply(t, ix, upsert(6, row(2, 9, 9, 9, "real")))
			if len(query(t, ix, lc(9, 9))) != 1 || len(query(t, ix, lc(1, 1))) != 1 {
				t.Fatal("a change after the repair lost to the repair's version")
			}
		},
		"RepairRacingTheStream": func(t *testing.T) {
			// The stream goes on while verify --repair runs (after a failover the source keeps
			// applying): the source row is read at change 2, and changes 2 and 3 are applied
			// while verify reads on. The repair must not put the row back to change 2 over the
			// newer change 3, which no later change would correct.
			ix := newIndexer(t, newStore(t), f)
			apply(t, ix, upsert(1, row(1, 1, 1, 1, "v1")))
			rows := func(f func(map[string]*string) bool) error {
				if f(row(1, 2, 2, 2, "v2")) {
					apply(t, ix, upsert(2, row(1, 2, 2, 2, "v2")), upsert(3, row(1, 3, 3, 3, "v3")))
				}
				return nil
			}
			if _, err := ix.Verify(ctx, "db1", "table1", rows, index.EncodingText, true, nil); err != nil {
				t.Fatal(err)
			}
			if len(query(t, ix, lc(3, 3))) != 1 || len(query(t, ix, lc(2, 2))) != 0 {
				t.Fatalf("after the repair the row is in las-2 (%d) and las-3 (%d): the repair overwrote the newer change 3 with the source's older read",
					len(query(t, ix, lc(2, 2))), len(query(t, ix, lc(3, 3))))
			}
		},
		"RepairKeepsANewerMoveBack": func(t *testing.T) {
			// As RepairRacingTheStream, with change 3 moving the row back into the keys it was
			// in when verify read the index: those entries are no longer extra, the repair must
			// leave them.
			ix := newIndexer(t, newStore(t), f)
			apply(t, ix, upsert(1, row(1, 1, 1, 1, "v1")))
			rows := func(f func(map[string]*string) bool) error {
				if f(row(1, 2, 2, 2, "v2")) {
					apply(t, ix, upsert(2, row(1, 2, 2, 2, "v2")), upsert(3, row(1, 1, 1, 1, "v3")))
				}
				return nil
			}
			if _, err := ix.Verify(ctx, "db1", "table1", rows, index.EncodingText, true, nil); err != nil {
				t.Fatal(err)
			}
			if len(query(t, ix, lc(1, 1))) != 1 || len(query(t, ix, lcb(1, 1, 1))) != 1 || len(query(t, ix, lc(2, 2))) != 0 {
				t.Fatalf("after the repair the row is in las-1 %d, las-1 bra-1 %d, las-2 %d times; want 1, 1, 0",
					len(query(t, ix, lc(1, 1))), len(query(t, ix, lcb(1, 1, 1))), len(query(t, ix, lc(2, 2))))
			}
		},
		"ConcurrentWritersConverge": func(t *testing.T) {
			store := newStore(t)
			ix := newIndexer(t, store, f)
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Go(func() {
					for v := 1; v <= 30; v++ {
						ver := uint64((v*7+w*13)%30 + 1)
						if _, err := ix.Apply(ctx, []index.Change{upsert(ver, row(1, int(ver), 1, 1, fmt.Sprint(ver)))}); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			keys, _ := ix.Keys("db1", "table1")
			dump, err := store.Dump(ctx, keys.Pattern())
			if err != nil {
				t.Fatal(err)
			}
			indexed := 0
			for k, v := range dump {
				if strings.HasPrefix(v, "hash:") {
					indexed++
					if !strings.Contains(k, "las-30") {
						t.Errorf("row left in %s", k)
					}
				}
			}
			if indexed != 2 {
				t.Fatalf("row in %d index keys, want 2 (both combinations of version 30): %v", indexed, dump)
			}
		},
	}
	maps.Copy(tests, deliveryOrderTests(newStore, f))
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t)
		})
	}
}

func keysOf(rows map[string]json.RawMessage) []string {
	out := make([]string, 0, len(rows))
	for k := range rows {
		out = append(out, k)
	}
	return out
}
