package redisindex_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
)

// TestApply_ManyRowsPerScriptAsOnePerRow: a batch of 200 writes to two tables, interleaved
// (several script calls of rowsPerScript rows; on Cluster the tables' slots differ, so each
// call holds one table's rows), whose rows change, move, are deleted and come back across call
// boundaries, with stale duplicates, has the outcomes and the keys of the memory store, which
// applies one row at a time.
func TestApply_ManyRowsPerScriptAsOnePerRow(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) { testManyRowsPerScript(t, topo.Client(t), topo.Cluster) })
	}
}

func testManyRowsPerScript(t *testing.T, client redis.UniversalClient, cluster bool) {
	prefix := indextest.UniquePrefix()
	spec, other := indextest.SeedTable(cluster), indextest.SeedTable(cluster)
	other.Table = "table2"
	var changes []index.Change
	v := uint64(0)
	for i := range 200 {
		spec := spec
		if i%2 == 1 {
			spec = other
		}
		id := i / 2 % 7 // every row changed many times, in different calls
		v++
		ver := index.BinlogVersion(1, v, 0)
		if i%5 == 4 {
			ver = index.BinlogVersion(1, v-20, 0) // older than the row's change 14 writes before: stale
		}
		ch := index.Change{DB: spec.DB, Table: spec.Table, Op: index.OpUpsert, Version: ver, Time: time.Unix(1700000000, 0),
			Row: map[string]*string{"id": index.Str(fmt.Sprint(id)), "lastAddrId": index.Str(fmt.Sprint(i % 3)),
				"categoryId": index.Str(fmt.Sprint(i % 4)), "brandId": index.Str("1"), "yn": index.Str("1")}}
		if i%11 == 10 {
			ch.Op = index.OpDelete
		}
		changes = append(changes, ch)
	}
	results := make([]index.Result, 2)
	dumps := make([]map[string]string, 2)
	for i, store := range []index.Store{redisindex.New(client), memindex.New()} {
		ix, err := index.New(store, []index.TableSpec{spec, other}, index.Options{Prefix: prefix, Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		if results[i], err = ix.Apply(context.Background(), changes); err != nil {
			t.Fatal(err)
		}
		pattern := prefix + ":*"
		if cluster {
			pattern = "{" + pattern
		}
		if dumps[i], err = store.Dump(context.Background(), pattern); err != nil {
			t.Fatal(err)
		}
	}
	if results[0].Applied != results[1].Applied || results[0].Stale != results[1].Stale || results[0].Stale == 0 {
		t.Fatalf("redis %+v, memory %+v", results[0], results[1])
	}
	if len(dumps[0]) != len(dumps[1]) {
		t.Fatalf("redis has %d keys, memory %d", len(dumps[0]), len(dumps[1]))
	}
	for k, want := range dumps[1] {
		if got := dumps[0][k]; got != want {
			t.Errorf("%s: redis %q, memory %q", k, got, want)
		}
	}
}
