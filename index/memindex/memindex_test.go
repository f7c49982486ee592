package memindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
)

func TestStoreSuite(t *testing.T) {
	indextest.RunStoreSuite(t, func(*testing.T) index.Store { return memindex.New() }, indextest.Features{})
}

func TestProperty_ShuffledDuplicatedDeliveryConverges(t *testing.T) {
	indextest.RunPropertySuite(t, func(*testing.T) index.Store { return memindex.New() }, indextest.Features{})
}

// TestQuietRow_KeepsItsVersionAndIsTruncated: a row unchanged for longer than the version TTL
// keeps its version key (which holds its relation), so a stale change of it is still stale, it
// still leaves its old key when it moves, and a truncate (which finds rows by their version
// keys) still removes it. A tombstone expires after the TTL.
func TestQuietRow_KeepsItsVersionAndIsTruncated(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	store := memindex.NewWithClock(func() time.Time { return now })
	ix, err := index.New(store, []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: "q", VersionTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	change := func(id string, cat string, lsn uint64, op index.Op) index.Change {
		return index.Change{DB: "db1", Table: "table1", Op: op, Version: index.PostgresVersion(lsn, lsn),
			Row: map[string]*string{"id": index.Str(id), "lastAddrId": index.Str("1"), "categoryId": index.Str(cat), "brandId": index.Str("1"), "yn": index.Str("1")}}
	}
	rows := func(cat string) int {
		got, err := ix.Query(ctx, "db1", "table1", map[string]string{"las": "1", "cat": cat})
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	if _, err := ix.Apply(ctx, []index.Change{change("1", "1", 10, index.OpUpsert), change("2", "1", 11, index.OpUpsert), change("3", "1", 12, index.OpDelete)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	keys, _ := ix.Keys("db1", "table1")
	dump, _ := store.Dump(ctx, keys.Pattern())
	if _, ok := dump[keys.Version("3")]; ok {
		t.Error("a tombstone outlived the version TTL")
	}
	if res, _ := ix.Apply(ctx, []index.Change{change("2", "5", 9, index.OpUpsert)}); res.Stale != 1 {
		t.Fatalf("a change older than a quiet row's version: %+v, want stale", res)
	}
	if _, err := ix.Apply(ctx, []index.Change{change("2", "2", 20, index.OpUpsert)}); err != nil {
		t.Fatal(err)
	}
	if rows("1") != 1 || rows("2") != 1 {
		t.Fatalf("after the move of a quiet row: cat 1 has %d rows, cat 2 %d; want 1 and 1", rows("1"), rows("2"))
	}
	if _, err := ix.Apply(ctx, []index.Change{{DB: "db1", Table: "table1", Op: index.OpTruncate, Version: index.PostgresVersion(30, 30)}}); err != nil {
		t.Fatal(err)
	}
	if rows("1") != 0 || rows("2") != 0 {
		t.Fatalf("after the truncate: cat 1 has %d rows, cat 2 %d; want none (the quiet row 1 was left)", rows("1"), rows("2"))
	}
}
