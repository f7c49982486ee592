package pgsource_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/pgsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

func TestMain(m *testing.M) { sqltest.Main(m) }

// itemsSpec is the index table of the test's items table.
func itemsSpec() index.TableSpec {
	return index.TableSpec{
		DB: "shop", Table: "items", Key: "id", DeleteColumn: "yn",
		Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "las", Type: index.TypeInt},
			{Name: "cat", Type: index.TypeInt}, {Name: "bra", Type: "int?"}, {Name: "name", Type: "string?"},
			{Name: "ok", Type: "string?"}}, // bool kept as text: "true"/"false" from every path
		Dimensions: [][]index.Part{
			{{Code: "las", Column: "las"}, {Code: "cat", Column: "cat"}, {Code: "bra", Column: "bra"}},
			{{Code: "las", Column: "las"}, {Code: "cat", Column: "cat"}},
		},
	}
}

type fixture struct {
	db    *sqldb.DB
	ix    *index.Indexer
	opt   pgsource.Options
	redis *redistest.Server
}

// plugins are the slot plugins every behaviour test runs with.
var plugins = []string{index.PluginPgoutput, index.PluginWal2JSON}

func setup(t *testing.T, rows int, plugin string, redisOpts ...redistest.Option) *fixture {
	t.Helper()
	dsn := sqltest.PostgresDSN(t)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	slot := "s_" + strings.TrimPrefix(indextest.UniquePrefix(), "t")
	t.Cleanup(func() { dropSlot(t, db, slot) })
	for _, q := range []string{
		"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, bra int, name text, yn int NOT NULL DEFAULT 1, ok boolean DEFAULT true)",
		fmt.Sprintf("INSERT INTO items (id, las, cat, bra, name) SELECT g, g %% 7, g %% 5, g %% 3, 'item ' || g FROM generate_series(1, %d) g", rows),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rds := redistest.StartStandalone(t, redisOpts...)
	client := rds.Client(t)
	ix, err := index.New(redisindex.New(client), []index.TableSpec{itemsSpec()}, index.Options{Prefix: indextest.UniquePrefix()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, ix: ix, redis: rds, opt: pgsource.Options{DB: db, URL: dsn, Plugin: plugin, Redis: client, Slot: slot, Database: "shop", Tables: []string{"items"},
		BackfillPage: 300, PollInterval: 20 * time.Millisecond, StatusInterval: 100 * time.Millisecond, ErrorDelay: 50 * time.Millisecond}}
}

// dropSlot drops the slot once its session is gone (a stopped source's walsender exits
// asynchronously): a slot left behind would keep the test database from being dropped and use
// up max_replication_slots.
func dropSlot(t *testing.T, db *sqldb.DB, slot string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := db.ExecContext(context.Background(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", slot)
		if err == nil {
			return // dropped, or there was none
		}
		if time.Now().After(deadline) {
			t.Logf("replication slot %s not dropped: %v", slot, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// run starts a source and returns its stop function.
func (f *fixture) run(t *testing.T) func() {
	t.Helper()
	src, err := pgsource.New(f.ix, f.opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = src.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// writes runs n rounds of concurrent changes: moves between index keys, deletes, logical
// deletes, inserts.
func (f *fixture) writes(t *testing.T, from, n int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		for _, q := range []string{
			fmt.Sprintf("UPDATE items SET cat = cat + 10, name = 'moved %d', ok = NOT ok WHERE id = %d", i, i*3),
			fmt.Sprintf("DELETE FROM items WHERE id = %d", i*3+1),
			fmt.Sprintf("UPDATE items SET yn = 0 WHERE id = %d", i*3+2),
			fmt.Sprintf("INSERT INTO items (id, las, cat, bra, name) VALUES (%d, 1, 2, NULL, 'new') ON CONFLICT (id) DO UPDATE SET las = 2", 100000+i),
		} {
			if _, err := f.db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// expected returns the index membership the table implies: index key → sorted ids.
func (f *fixture) expected(t *testing.T) map[string]string {
	t.Helper()
	keys, _ := f.ix.Keys("shop", "items")
	spec := itemsSpec()
	rows, err := f.db.QueryContext(context.Background(), "SELECT id::text, las::text, cat::text, bra::text FROM items WHERE yn <> 0")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sets := map[string][]string{}
	for rows.Next() {
		var id, las, cat string
		var bra *string
		if err := rows.Scan(&id, &las, &cat, &bra); err != nil {
			t.Fatal(err)
		}
		vals := map[string]*string{"las": &las, "cat": &cat, "bra": bra}
		for _, d := range spec.Dimensions {
			v := make([]*string, len(d))
			for i, p := range d {
				v[i] = vals[p.Column]
			}
			k := keys.Index(d, v)
			sets[k] = append(sets[k], id)
		}
	}
	return joinSets(sets)
}

// actual returns the index membership in Redis.
func (f *fixture) actual(t *testing.T) map[string]string {
	t.Helper()
	keys, _ := f.ix.Keys("shop", "items")
	dump, err := redisindex.New(f.opt.Redis).Dump(context.Background(), keys.Pattern())
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string][]string{}
	for k, v := range dump {
		body, ok := strings.CutPrefix(v, "hash:")
		if !ok {
			continue
		}
		for _, line := range strings.Split(body, "\n") {
			id, _, _ := strings.Cut(line, "=")
			sets[k] = append(sets[k], id)
		}
	}
	return joinSets(sets)
}

// waitEqual waits until Redis holds exactly what the table implies.
func (f *fixture) waitEqual(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		want, got := f.expected(t), f.actual(t)
		if equal(want, got) && f.verify(t).Clean() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index differs from the table: %s\nverify: %+v", diff(want, got), f.verify(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func diff(want, got map[string]string) string {
	var out []string
	for k, v := range want {
		if got[k] != v {
			out = append(out, fmt.Sprintf("%s: want %.80s, got %.80s", k, v, got[k]))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: extra %.80s", k, v))
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("… %d more", len(out)-10))
	}
	return strings.Join(out, "\n")
}

// TestSource_BackfillJoinsLiveStream: 3,000 existing rows are backfilled while writes go on
// (rows moved between index keys, deleted, logically deleted, inserted); the index ends equal
// to the table, and every row's version key holds a time after its version (backfilled rows
// too: they were stored as "p…|" without one).
func TestSource_BackfillJoinsLiveStream(t *testing.T) {
	for _, plugin := range plugins {
		t.Run(plugin, func(t *testing.T) {
			f := setup(t, 3000, plugin)
			stop := f.run(t)
			defer stop()
			f.writes(t, 1, 150)
			f.waitEqual(t)
			f.writes(t, 151, 50)
			f.waitEqual(t)
			f.checkStamps(t, 3000)
		})
	}
}

// checkStamps fails unless at least n version keys exist and each is "<version>|<RFC 3339
// time>|<relation>" (index.RowValue).
func (f *fixture) checkStamps(t *testing.T, n int) {
	t.Helper()
	keys, _ := f.ix.Keys("shop", "items")
	dump, err := redisindex.New(f.opt.Redis).Dump(context.Background(), keys.Pattern())
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for k, v := range dump {
		if !strings.Contains(k, ":fil-") {
			continue
		}
		seen++
		_, stamp, _, _ := index.ParseRowValue(strings.TrimPrefix(v, "string:"))
		if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil {
			t.Fatalf("version key %s = %q: no change time after the version (%v)", k, v, err)
		}
	}
	if seen < n {
		t.Fatalf("%d version keys, want at least %d", seen, n)
	}
}

// TestSource_RestartResumes: the source is stopped abruptly mid-stream (between any two of its
// steps) several times while writes go on; each new source resumes from the position in Redis
// and the slot, and the index ends equal to the table, nothing lost or regressed.
func TestSource_RestartResumes(t *testing.T) {
	for _, plugin := range plugins {
		t.Run(plugin, func(t *testing.T) {
			f := setup(t, 1500, plugin)
			var wg sync.WaitGroup
			wg.Go(func() { f.writes(t, 1, 400) })
			for i := 0; i < 4; i++ {
				stop := f.run(t)
				time.Sleep(time.Duration(150+i*70) * time.Millisecond) // stop points, not an assertion
				stop()
			}
			wg.Wait()
			stop := f.run(t)
			defer stop()
			f.waitEqual(t)
		})
	}
}
func joinSets(sets map[string][]string) map[string]string {
	out := make(map[string]string, len(sets))
	for k, ids := range sets {
		sort.Strings(ids)
		out[k] = strings.Join(ids, ",")
	}
	return out
}
