package index_test

import (
	"context"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
)

// flakyCounters fails its first AddCounters, as Redis does while it is down.
type flakyCounters struct {
	*memindex.Store
	failed bool
}

func (s *flakyCounters) AddCounters(ctx context.Context, key string, c index.CounterSet) error {
	if !s.failed {
		s.failed = true
		return redstate.Errorf(redstate.EUNAVAILABLE, "redis down")
	}
	return s.Store.AddCounters(ctx, key, c)
}

// TestFlushCounters_KeepsWhatFailedForTheNextFlush: a failed flush loses nothing and adds
// nothing twice.
func TestFlushCounters_KeepsWhatFailedForTheNextFlush(t *testing.T) {
	ctx := context.Background()
	store := &flakyCounters{Store: memindex.New()}
	ix, err := index.New(store, []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	id := "1"
	if _, err := ix.Apply(ctx, []index.Change{{DB: "db1", Table: "table1", Op: index.OpDelete, Row: map[string]*string{"id": &id}, Version: index.PostgresVersion(1, 1)}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.FlushCounters(ctx); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("first flush = %v, want EUNAVAILABLE", err)
	}
	table := index.TableRef{DB: "db1", Table: "table1"}
	for i := range 3 {
		c, err := ix.SharedCounters(ctx)
		if err != nil || c.Tables[table].Applied != 1 {
			t.Fatalf("shared counters (round %d) = %+v, %v; want 1 applied", i, c, err)
		}
		if err := ix.FlushCounters(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if stored, _ := store.Counters(ctx, ix.CountersKey()); stored.Tables[table].Applied != 1 {
		t.Fatalf("stored = %+v, want 1 applied", stored)
	}
}
