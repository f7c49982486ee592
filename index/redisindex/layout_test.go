package redisindex_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// layout1Apply is the apply script of layout 1 (index/redisindex/scripts.go at commit
// 9854f3e, the last release before layout 2), kept to write an index as that release did:
// KEYS[1] the truncate key, ARGV[1] the version TTL ms; per row KEYS version key, relation key
// (kid-), m index keys; ARGV m (-1: delete), id, "<version>|<stamp>", row JSON, relation JSON.
//
//go:embed testdata/layout1_apply.lua
var layout1Apply string

// recorder is a Store that records the writes an Indexer gives it, to replay them with the
// layout-1 script.
type recorder struct {
	*memindex.Store
	writes []index.RowWrite
}

func (r *recorder) Apply(ctx context.Context, writes []index.RowWrite) ([]index.Outcome, error) {
	r.writes = append(r.writes, writes...)
	return r.Store.Apply(ctx, writes)
}

// applyLayout1 applies writes to client with the layout-1 script, one row a call, and
// returns the outcomes.
func applyLayout1(t *testing.T, client redis.UniversalClient, keys index.Keys, writes []index.RowWrite) []index.Outcome {
	t.Helper()
	script := redis.NewScript(layout1Apply)
	out := make([]index.Outcome, len(writes))
	for i, w := range writes {
		ks := []string{w.FloorKey, w.VersionKey, keys.LegacyRelation(w.ID)}
		m, rel := "-1", ""
		if !w.Delete {
			ks = append(ks, w.Keys...)
			b, _ := json.Marshal(w.Keys)
			m, rel = fmt.Sprint(len(w.Keys)), string(b)
		}
		res, err := script.Run(context.Background(), client, ks, w.TTL.Milliseconds(), m, w.ID, index.VersionValue(w.Version, w.Stamp), string(w.Row), rel).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = index.Stale
		if res[0] == 1 {
			out[i] = index.Applied
		}
	}
	return out
}

// layoutChange is a change of the seed table's row id at version seq, in category cat (its
// index keys las-<id%3>:cat-<cat>…), or a delete.
func layoutChange(id, cat int, seq uint64, del bool) index.Change {
	ch := index.Change{DB: "db1", Table: "table1", Op: index.OpUpsert, Version: index.BinlogVersion(1, seq, 0),
		Time: time.Unix(1700000000+int64(seq), 0),
		Row: map[string]*string{"id": index.Str(fmt.Sprint(id)), "lastAddrId": index.Str(fmt.Sprint(id % 3)),
			"categoryId": index.Str(fmt.Sprint(cat)), "brandId": index.Str("1"), "name": index.Str(fmt.Sprintf("r%d-%d", id, seq)), "yn": index.Str("1")}}
	if del {
		ch.Op = index.OpDelete
	}
	return ch
}

// asLayout2 is a table's Dump as layout 2 holds it: a layout-1 version key value
// ("<version>|<time>") with its row's relation key (kid-) folded in, and the kid- key gone. For
// the rows in forgotten (whose version key expired under layout 1), the version key is
// compared by its relation alone.
func asLayout2(t *testing.T, keys index.Keys, dump map[string]string, forgotten map[string]bool) map[string]string {
	t.Helper()
	out := maps.Clone(dump)
	relations := map[string]string{} // row id → relation of its kid- key
	for k, v := range dump {
		if id, ok := keys.LegacyRelationID(k); ok {
			var rel []string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(v, "string:")), &rel); err != nil {
				t.Fatalf("relation key %s = %q", k, v)
			}
			relations[id] = index.EncodeRelation(keys.TablePrefix(), rel)
			delete(out, k)
		}
	}
	for k, v := range dump {
		id, ok := keys.VersionID(k)
		if !ok {
			continue
		}
		version, stamp, rel, layout2 := index.ParseRowValue(strings.TrimPrefix(v, "string:"))
		if !layout2 {
			rel = relations[id]
		}
		out[k] = "string:" + index.RowValue(version, stamp, rel)
	}
	for id := range forgotten {
		rel, ok := relations[id]
		if !ok {
			_, _, rel, _ = index.ParseRowValue(strings.TrimPrefix(out[keys.Version(id)], "string:"))
		}
		out[keys.Version(id)] = "relation:" + rel
	}
	return out
}

// TestLayout_Layout1IndexKeepsWorkingThroughTheMigration: an index written by the layout-1
// script (relations in kid- keys; some rows' version keys expired, as after 30 quiet days) is
// upgraded: stale, newer, moving and deleting changes of its rows are applied by the layout-2
// script before the migration, the migration moves the rest, and changes after it apply as on
// a fresh index. At every step the index keys, and every row key read as layout 2, equal the
// memory store's, which applied the same changes; at the end every key is equal, no kid- key is
// left, a row in the index has a version key without a TTL and a tombstone one with it.
func TestLayout_Layout1IndexKeepsWorkingThroughTheMigration(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		cluster := redisconn.IsCluster(client)
		spec, prefix := indextest.SeedTable(cluster), indextest.UniquePrefix()
		mem := &recorder{Store: memindex.New()}
		ixMem, err := index.New(mem, []index.TableSpec{spec}, index.Options{Prefix: prefix, Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		ixRedis, err := index.New(redisindex.New(client), []index.TableSpec{spec}, index.Options{Prefix: prefix, Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := ixRedis.Keys("db1", "table1")
		compare := func(step string, forgotten map[string]bool) {
			t.Helper()
			got, err := redisindex.New(client).Dump(ctx, keys.Pattern())
			if err != nil {
				t.Fatal(err)
			}
			want, err := mem.Dump(ctx, keys.Pattern())
			if err != nil {
				t.Fatal(err)
			}
			g, w := asLayout2(t, keys, got, forgotten), asLayout2(t, keys, want, forgotten)
			for k := range maps.Keys(w) {
				if g[k] != w[k] {
					t.Errorf("%s: %s = %q, want %q", step, k, g[k], w[k])
				}
			}
			for k := range maps.Keys(g) {
				if _, ok := w[k]; !ok {
					t.Errorf("%s: %s = %q, not in the memory store", step, k, g[k])
				}
			}
		}
		applyBoth := func(step string, changes []index.Change) {
			t.Helper()
			want, err := ixMem.Apply(ctx, changes)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ixRedis.Apply(ctx, changes)
			if err != nil {
				t.Fatal(err)
			}
			if got.Applied != want.Applied || got.Stale != want.Stale || got.Failed != 0 {
				t.Fatalf("%s: redis %+v, memory %+v", step, got, want)
			}
		}

		// Layout 1: 60 rows inserted, a third moved, every seventh deleted, 50..54 deleted and
		// inserted again.
		seq := uint64(100)
		var h1 []index.Change
		for id := 1; id <= 60; id++ {
			seq++
			h1 = append(h1, layoutChange(id, id%4, seq, false))
		}
		for id := 1; id <= 60; id++ {
			seq++
			switch {
			case id%7 == 0:
				h1 = append(h1, layoutChange(id, 0, seq, true))
			case id%3 == 0:
				h1 = append(h1, layoutChange(id, id%4+1, seq, false))
			case id >= 50 && id < 55:
				h1 = append(h1, layoutChange(id, 0, seq, true))
				seq++
				h1 = append(h1, layoutChange(id, 9, seq, false))
			}
		}
		if _, err := ixMem.Apply(ctx, h1); err != nil {
			t.Fatal(err)
		}
		for i, o := range applyLayout1(t, client, keys, mem.writes) {
			if o != index.Applied {
				t.Fatalf("layout 1: write %d %s", i, map[index.Outcome]string{index.Stale: "stale"}[o])
			}
		}
		// Rows quiet for longer than the version TTL under layout 1: only their kid- key is left.
		forgotten := map[string]bool{"1": true, "2": true, "4": true, "5": true, "8": true, "10": true}
		for id := range forgotten {
			if n := client.Del(ctx, keys.Version(id)).Val(); n != 1 {
				t.Fatalf("row %s had no version key", id)
			}
		}
		compare("layout 1", forgotten)

		// The upgrade, before the migration: newer moves of every even row (forgotten ones
		// included: they must leave their old keys), stale changes of every fifth row that has
		// a version, deletes of every ninth, an insert of a new row.
		var h2 []index.Change
		for id := 1; id <= 61; id++ {
			seq++
			switch {
			case id%9 == 0:
				h2 = append(h2, layoutChange(id, 0, seq, true))
			case id%2 == 0 || id == 61:
				h2 = append(h2, layoutChange(id, id%4+2, seq, false))
				delete(forgotten, fmt.Sprint(id))
			case id%5 == 0 && !forgotten[fmt.Sprint(id)]:
				h2 = append(h2, layoutChange(id, 3, 101, false)) // as old as the first insert
			}
		}
		applyBoth("upgrade", h2)
		compare("upgrade", forgotten)

		// The migration moves every kid- key left, then marks the table.
		legacy := 0
		dump, _ := redisindex.New(client).Dump(ctx, keys.Pattern())
		for k := range dump {
			if _, ok := keys.LegacyRelationID(k); ok {
				legacy++
			}
		}
		if legacy == 0 {
			t.Fatal("no layout-1 row was left for the migration")
		}
		moved, already, err := ixRedis.MigrateLayout(ctx, "db1", "table1", nil)
		if err != nil || already || moved != legacy {
			t.Fatalf("MigrateLayout = %d, %v, %v; want %d rows moved", moved, already, err, legacy)
		}
		if _, already, err := ixMem.MigrateLayout(ctx, "db1", "table1", nil); err != nil || already {
			t.Fatalf("memory MigrateLayout: %v, %v", already, err)
		}
		for id := range forgotten { // the version they lost is "", older than every change
			v := client.Get(ctx, keys.Version(id)).Val()
			if version, _, _, layout2 := index.ParseRowValue(v); version != "" || !layout2 {
				t.Errorf("forgotten row %s migrated to %q", id, v)
			}
		}
		compare("migrated", forgotten)
		if moved, already, err := ixRedis.MigrateLayout(ctx, "db1", "table1", nil); err != nil || !already || moved != 0 {
			t.Fatalf("MigrateLayout again = %d, %v, %v; want already", moved, already, err)
		}

		// After the migration: every row changes again (moves), every eleventh is deleted.
		var h3 []index.Change
		for id := 1; id <= 61; id++ {
			seq++
			h3 = append(h3, layoutChange(id, id%4+3, seq, id%11 == 0))
		}
		applyBoth("after the migration", h3)
		compare("after the migration", nil)
		dump, _ = redisindex.New(client).Dump(ctx, keys.Pattern())
		for k := range dump {
			if _, ok := keys.LegacyRelationID(k); ok {
				t.Errorf("relation key %s left", k)
			}
			id, ok := keys.VersionID(k)
			if !ok {
				continue
			}
			ttl := client.PTTL(ctx, k).Val()
			if tombstone := strings.HasSuffix(dump[k], "|"); (tombstone && ttl <= 0) || (!tombstone && ttl != -1) {
				t.Errorf("row %s: version key %q has TTL %v (a tombstone has one, a row in the index none)", id, dump[k], ttl)
			}
		}
	})
}

// TestMigrateLayout_RefusesARelationOutsideTheTable: a kid- key listing a key that does not
// belong to its table (another prefix) is left as it is, with an EINVALID error naming it, and
// the table is not marked.
func TestMigrateLayout_RefusesARelationOutsideTheTable(t *testing.T) {
	client := redistest.StartStandalone(t).Client(t)
	ctx := context.Background()
	ix, err := index.New(redisindex.New(client), []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: indextest.UniquePrefix()})
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := ix.Keys("db1", "table1")
	client.Set(ctx, keys.LegacyRelation("1"), `["other:db1:table1:las-1:cat-1"]`, 0)
	_, _, err = ix.MigrateLayout(ctx, "db1", "table1", nil)
	if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), keys.LegacyRelation("1")) {
		t.Fatalf("MigrateLayout = %v, want EINVALID naming the relation key", err)
	}
	if client.Exists(ctx, keys.LegacyRelation("1"), keys.Layout()).Val() != 1 {
		t.Fatal("the relation key was removed or the table marked")
	}
}
