package index_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
)

// Every Apply tells ObserveApplied its applied and stale counts, with the source its context
// names ("push" when none).
func TestIndexer_ObserveAppliedNamesTheSource(t *testing.T) {
	ix, err := index.New(memindex.New(), []index.TableSpec{indextest.SeedTable(false)}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string][2]int64{}
	ix.ObserveApplied(func(source string, applied, stale int64) {
		mu.Lock()
		defer mu.Unlock()
		c := got[source]
		got[source] = [2]int64{c[0] + applied, c[1] + stale}
	})
	change := func(v uint64, id string) index.Change {
		return index.Change{DB: "db1", Table: "table1", Op: index.OpUpsert, Version: index.PostgresVersion(v, v), Time: time.Unix(int64(v), 0),
			Row: map[string]*string{"id": index.Str(id), "provinceId": index.Str("1"), "cityId": index.Str("72"), "lastAddrId": index.Str("3"),
				"categoryId": index.Str("4"), "brandId": index.Str("5"), "name": index.Str("n"), "yn": index.Str("1")}}
	}
	ctx := context.Background()
	if _, err := ix.Apply(index.WithSource(ctx, "binlog"), []index.Change{change(2, "1"), change(2, "2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Apply(ctx, []index.Change{change(1, "1"), change(3, "3")}); err != nil { // row 1 at version 1 is stale
		t.Fatal(err)
	}
	if got["binlog"] != [2]int64{2, 0} || got["push"] != [2]int64{1, 1} {
		t.Errorf("observed %v, want binlog 2 applied, push 1 applied 1 stale", got)
	}
}
