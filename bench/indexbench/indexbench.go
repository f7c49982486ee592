// Package indexbench benchmarks the CDC tag index (index/redisindex through index.Indexer)
// against the seed's own algorithm on the same go-redis client in the same run:
//
//	apply  a generated change stream (inserts, updates that move rows between index keys,
//	       deletes) applied by ours (batched, one Lua script per row with the version check)
//	       vs the seed's algorithm per event (GET relation, then a pipeline of HDEL/HSET/SET,
//	       no version check), events/s over the whole stream
//	query  Indexer.Query (key from conditions, HGETALL) vs raw HGETALL of the same keys
//	query_cached  the same queries through the client-side cache (Target.Cache; the 1,000
//	       las/cat keys are the hot working set) vs raw HGETALL
//
// Both apply the same stream with the same concurrency; a row's events always go to the same
// client, in order.
package indexbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redisconn"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Target is the Redis client, the concurrent appliers and queriers (default 8) and the
	// progress writer.
	bench.Target
	// Rows is the number of rows of the generated table (default 100,000).
	Rows int
	// Batch is how many events ours applies per call (default 256).
	Batch int
	// QueryDuration is the measured time of the query comparison per implementation (default 5s).
	QueryDuration time.Duration
}

// Measurement is the outcome of one comparison.
type Measurement struct {
	// Name is "index.apply" or "index.query".
	Name string
	// Ours and Baseline are operations per second (events/s or queries/s).
	Ours, Baseline float64
	// Events is the stream length (apply only).
	Events int
	// OursStale counts events ours skipped as stale (0 for an in-order stream).
	OursStale int
	// RedisCPU and BaselineRedisCPU are the Redis server's CPU time per event (INFO cpu; zero
	// when not measured).
	RedisCPU, BaselineRedisCPU time.Duration
}

// Ratio is Ours/Baseline.
func (m Measurement) Ratio() float64 {
	if m.Baseline == 0 {
		return 0
	}
	return m.Ours / m.Baseline
}

// ResultLine is the machine-readable line: RESULT <name> ours=<x> baseline=<y> ratio=<r>, then
// redis_cpu_us=<µs> baseline_redis_cpu_us=<µs> when the server's CPU was measured.
func (m Measurement) ResultLine() string {
	line := fmt.Sprintf("RESULT %s ours=%.0f baseline=%.0f ratio=%.2f", m.Name, m.Ours, m.Baseline, m.Ratio())
	if m.RedisCPU > 0 || m.BaselineRedisCPU > 0 {
		line += fmt.Sprintf(" redis_cpu_us=%.1f baseline_redis_cpu_us=%.1f", us(m.RedisCPU), us(m.BaselineRedisCPU))
	}
	return line
}

// Measurements are a run's measurements.
type Measurements []Measurement

// Print implements bench.Printer: one row per measurement, then the RESULT lines.
func (ms Measurements) Print(w io.Writer) error {
	for _, m := range ms {
		extra := ""
		if m.Events > 0 {
			extra = fmt.Sprintf(" (%d events, %d stale)", m.Events, m.OursStale)
		}
		if _, err := fmt.Fprintf(w, "%-12s ours %10.0f/s   baseline %10.0f/s%s\n", m.Name, m.Ours, m.Baseline, extra); err != nil {
			return err
		}
	}
	lines := make([]string, len(ms))
	for i, m := range ms {
		lines[i] = m.ResultLine()
	}
	return bench.PrintLines(w, lines)
}

// table is the benchmark's table: the seed's las/cat/bra example.
func table(hashTag bool) index.TableSpec {
	return index.TableSpec{
		DB: "bench", Table: "items", Key: "id", DeleteColumn: "yn", HashTag: hashTag,
		Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "lastAddrId", Type: index.TypeInt},
			{Name: "categoryId", Type: index.TypeInt}, {Name: "brandId", Type: index.TypeInt}, {Name: "name", Type: index.TypeString}},
		Dimensions: [][]index.Part{
			{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}, {Code: "bra", Column: "brandId"}},
			{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}},
		},
	}
}

// Run generates the stream, measures apply, query and, with Target.Cache, query_cached,
// removes the keys and returns the measurements.
func Run(ctx context.Context, opts Options) (Measurements, error) {
	if err := opts.Prepare("indexbench", 8); err != nil {
		return nil, err
	}
	bench.Default(&opts.Rows, 100000)
	bench.Default(&opts.Batch, 256)
	bench.Default(&opts.QueryDuration, 5*time.Second)
	cluster := redisconn.IsCluster(opts.Client)
	prefix := bench.Namespace()
	defer opts.Cleanup(ctx, prefix, 2*time.Minute)
	if cluster { // the table's keys start with a hash tag: "{<prefix>-ours:bench:items}:…"
		defer opts.Cleanup(ctx, "{"+prefix, 2*time.Minute)
	}
	ix, err := index.New(redisindex.New(opts.Client), []index.TableSpec{table(cluster)}, index.Options{Prefix: prefix + "-ours", Cluster: cluster})
	if err == nil { // what serve does at start: a new table has no layout-1 keys and is marked layout 2
		err = ix.MigrateLayouts(ctx, slog.New(slog.DiscardHandler))
	}
	if err != nil {
		return nil, err
	}
	// The baseline writes the seed's layout under its own prefix, with the same keys module.
	seedKeys := index.NewKeys(redstate.Prefix("", prefix+"-seed"), "bench", "items", cluster)

	streams := generate(opts.Rows, opts.Clients)
	events := 0
	for _, s := range streams {
		events += len(s)
	}
	opts.Progressf("apply: %d rows, %d events, %d clients (ours: batches of %d)\n", opts.Rows, events, opts.Clients, opts.Batch)

	oursStart := time.Now()
	var stale, applied int
	var mu sync.Mutex
	if err := parallel(opts.Clients, func(c int) error {
		s := streams[c]
		for i := 0; i < len(s); i += opts.Batch {
			res, err := ix.Apply(ctx, s[i:min(i+opts.Batch, len(s))])
			if err != nil {
				return err
			}
			mu.Lock()
			stale += res.Stale
			applied += res.Applied
			mu.Unlock()
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("ours: %w", err)
	}
	oursElapsed := time.Since(oursStart)
	opts.Progressf("apply/ours: %d applied, %d stale in %s\n", applied, stale, oursElapsed.Round(time.Millisecond))

	spec := table(cluster)
	baseStart := time.Now()
	if err := parallel(opts.Clients, func(c int) error {
		for _, ch := range streams[c] {
			if err := seedApply(ctx, opts.Client, seedKeys, spec, ch); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	baseElapsed := time.Since(baseStart)
	opts.Progressf("apply/seed: %s\n", baseElapsed.Round(time.Millisecond))
	out := Measurements{{Name: "index.apply", Events: events, OursStale: stale,
		Ours: float64(events) / oursElapsed.Seconds(), Baseline: float64(events) / baseElapsed.Seconds()}}

	// Query: random las/cat combinations present in the data.
	rngs := make([]*rand.Rand, opts.Clients)
	for c := range rngs {
		rngs[c] = rand.New(rand.NewPCG(uint64(c)+7, 11))
	}
	keyOf := func(las, cat int) string {
		l, c := strconv.Itoa(las), strconv.Itoa(cat)
		k, _ := ix.QueryKey("bench", "items", map[string]string{"las": l, "cat": c})
		return k
	}
	ours := func(ctx context.Context, c int, _ int64) error {
		r := rngs[c]
		_, err := ix.Query(ctx, "bench", "items", map[string]string{"las": strconv.Itoa(1 + r.IntN(lasValues)), "cat": strconv.Itoa(1 + r.IntN(catValues))})
		return err
	}
	raw := func(ctx context.Context, c int, _ int64) error {
		r := rngs[c]
		return opts.Client.HGetAll(ctx, keyOf(1+r.IntN(lasValues), 1+r.IntN(catValues))).Err()
	}
	pairs := []bench.Pair{{Name: "query", Ours: ours, Baseline: raw}}
	if opts.Cache != nil {
		cached, err := index.New(redisindex.NewCached(opts.Client, opts.Cache), []index.TableSpec{table(cluster)}, index.Options{Prefix: prefix + "-ours", Cluster: cluster})
		if err != nil {
			return out, err
		}
		// Measured on a hot working set: a first pass caches every las/cat key.
		for las := 1; las <= lasValues; las++ {
			for cat := 1; cat <= catValues; cat++ {
				if _, err := cached.Query(ctx, "bench", "items", map[string]string{"las": strconv.Itoa(las), "cat": strconv.Itoa(cat)}); err != nil {
					return out, err
				}
			}
		}
		pairs = append(pairs, bench.Pair{Name: "query_cached", Baseline: raw, Ours: func(ctx context.Context, c int, _ int64) error {
			r := rngs[c]
			_, err := cached.Query(ctx, "bench", "items", map[string]string{"las": strconv.Itoa(1 + r.IntN(lasValues)), "cat": strconv.Itoa(1 + r.IntN(catValues))})
			return err
		}})
	}
	suite := bench.Suite{Prefix: "index.", Baseline: "raw", Against: "raw HGETALL", Config: opts.Config(opts.QueryDuration)}
	cs, err := suite.Run(ctx, pairs)
	for _, c := range cs {
		out = append(out, Measurement{Name: c.Name, Ours: c.Ours.OpsPerSec(), Baseline: c.Baseline.OpsPerSec()})
	}
	return out, err
}

// Value domains of the generated rows.
const (
	lasValues = 50
	catValues = 20
	braValues = 10
)

// generate builds the change stream, split by row over clients: every row is inserted, half
// of them are then updated to another category (moving between index keys), a tenth deleted.
// Versions increase along the stream.
func generate(rows, clients int) [][]index.Change {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]index.Change, clients)
	v := uint64(0)
	next := func() index.Version { v++; return index.BinlogVersion(1, v, 0) }
	mk := func(id, las, cat, bra int, op index.Op) index.Change {
		s := func(n int) *string { x := strconv.Itoa(n); return &x }
		return index.Change{DB: "bench", Table: "items", Op: op, Version: next(), Time: time.Now(),
			Row: map[string]*string{"id": s(id), "lastAddrId": s(las), "categoryId": s(cat), "brandId": s(bra), "name": index.Str("item-" + strconv.Itoa(id)), "yn": index.Str("1")}}
	}
	type state struct{ las, cat, bra int }
	st := make([]state, rows+1)
	for id := 1; id <= rows; id++ {
		st[id] = state{1 + r.IntN(lasValues), 1 + r.IntN(catValues), 1 + r.IntN(braValues)}
		out[id%clients] = append(out[id%clients], mk(id, st[id].las, st[id].cat, st[id].bra, index.OpUpsert))
	}
	for id := 1; id <= rows; id += 2 {
		st[id].cat = 1 + (st[id].cat % catValues)
		out[id%clients] = append(out[id%clients], mk(id, st[id].las, st[id].cat, st[id].bra, index.OpUpsert))
	}
	for id := 1; id <= rows; id += 10 {
		out[id%clients] = append(out[id%clients], mk(id, st[id].las, st[id].cat, st[id].bra, index.OpDelete))
	}
	return out
}

// seedApply is the seed's algorithm for one event (its steps 5-7): GET the relation key, then
// one pipeline of HDEL (keys left, or all on delete), HSET (current keys), SET relation, SET
// version — no version check.
func seedApply(ctx context.Context, c redis.UniversalClient, k index.Keys, spec index.TableSpec, ch index.Change) error {
	id := *ch.Row["id"]
	rel, err := c.Get(ctx, k.LegacyRelation(id)).Result()
	if err != nil && err != redis.Nil {
		return err
	}
	var old []string
	if rel != "" {
		_ = json.Unmarshal([]byte(rel), &old)
	}
	var cur []string
	for _, d := range spec.Dimensions {
		vals := make([]*string, len(d))
		for i, p := range d {
			vals[i] = ch.Row[p.Column]
		}
		cur = append(cur, k.Index(d, vals))
	}
	row, _ := json.Marshal(ch.Row)
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		if ch.Op == index.OpDelete {
			for _, key := range old {
				p.HDel(ctx, key, id)
			}
			p.Del(ctx, k.LegacyRelation(id))
			return nil
		}
		for _, key := range old {
			if !contains(cur, key) {
				p.HDel(ctx, key, id)
			}
		}
		for _, key := range cur {
			p.HSet(ctx, key, id, row)
		}
		relJSON, _ := json.Marshal(cur)
		p.Set(ctx, k.LegacyRelation(id), relJSON, 0)
		p.Set(ctx, k.Version(id), ch.Time.UnixMilli(), 30*24*time.Hour)
		return nil
	})
	return err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parallel runs f for clients 0..n-1 concurrently and returns the first error.
func parallel(n int, f func(c int) error) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for c := range n {
		wg.Go(func() { errs <- f(c) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
