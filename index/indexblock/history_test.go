package indexblock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indexblock"
)

// The index block records the changes its indexer applies into the history, by source: a
// pushed change reads as index.applied of source push, a stale one as index.stale.
func TestOpen_RecordsAppliedChangesIntoTheHistory(t *testing.T) {
	t0 := time.Now().Truncate(time.Minute)
	clock := historytest.NewClock(t0)
	store := history.NewMemoryStore(clock.Now)
	rec, err := history.NewRecorder(history.Options{Store: store, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	spec := index.TableSpec{DB: "db1", Table: "t", Key: "id", Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "a", Type: index.TypeInt}},
		Dimensions: [][]index.Part{{{Code: "a", Column: "a"}}}}
	ib, err := indexblock.Open(t.Context(), component.Env{History: rec}, index.Config{Tables: []index.TableSpec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	change := func(v uint64) index.Change {
		return index.Change{DB: "db1", Table: "t", Op: index.OpUpsert, Version: index.PostgresVersion(v, v), Time: time.Unix(int64(v), 0),
			Row: map[string]*string{"id": index.Str("1"), "a": index.Str("2")}}
	}
	if _, err := ib.Indexer().Apply(context.Background(), []index.Change{change(2), change(1)}); err != nil {
		t.Fatal(err)
	}
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := history.NewReader(store, func() time.Time { return t0.Add(2 * time.Minute) }).Read(t.Context(),
		history.Query{Metrics: []string{history.IndexApplied, history.IndexStale}, Window: "24h"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range res.Series {
		for i, at := range res.Times {
			if at == t0.Unix() && s.Values[i] != nil {
				got[s.Metric+" "+s.Labels["source"]] = *s.Values[i] * 60 // per second → the minute's count
			}
		}
	}
	if got["index.applied push"] != 1 || got["index.stale push"] != 1 {
		t.Errorf("recorded %v, want 1 applied and 1 stale from push", got)
	}
}
