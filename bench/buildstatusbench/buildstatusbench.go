// Package buildstatusbench benchmarks the Redis build-status store (buildstatus/redisstore)
// against raw go-redis commands on the same client in the same run: get (Get vs GET), save
// (Save vs SET key json EX ttl) and batch-get (GetMany vs MGET); against Dapr's Redis state
// store, save_vs_dapr (a compare-and-set Save vs Dapr's Set with an ETag, see dapr.go); with the client-side cache,
// get_cached and batch_get_cached (the same reads through the cache, vs the same raw reads),
// the cache's staleness seen by a second instance and its memory per cached build. The baselines do no JSON work
// at all: GET returns bytes, SET writes pre-encoded bytes, so the ratio charges our store with
// everything it does beyond one round trip (decoding, ETag hashing, the save script's index
// and event writes).
package buildstatusbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Target is the Redis client, the concurrent callers (default 16) and the progress writer.
	bench.Target
	// Duration is the measured time per implementation and operation (default 10s).
	Duration time.Duration
	// Batch is the batch-get size (default 1000, buildstatus.MaxBatch at most).
	Batch int
	// Size is the number of platforms per document (default 2, like the seed's sample).
	Size int
	// Builds is how many builds are seeded (default 10,000).
	Builds int
	// TTL is the seeded and saved builds' TTL (default 1h).
	TTL time.Duration
	// Ops selects operations by name ("get", "save", "batch_get", "save_vs_dapr" and, with
	// Target.Cache, "get_cached", "batch_get_cached", "staleness", "memory"); empty means all
	// (save_vs_dapr only on a standalone server).
	Ops []string
	// DaprPeer is the Dapr peer of save_vs_dapr: the directory of its module (built with the go
	// command) or a built binary. Empty: bench/peers/daprstate in this source tree.
	DaprPeer string
	// Keep leaves the benchmark's keys in Redis.
	Keep bool
}

func (o *Options) defaults() error {
	if err := o.Prepare("buildstatusbench", 16); err != nil {
		return err
	}
	bench.Default(&o.Duration, 10*time.Second)
	bench.Default(&o.Batch, buildstatus.MaxBatch)
	if o.Batch > buildstatus.MaxBatch {
		return fmt.Errorf("buildstatusbench: batch %d exceeds the store's limit %d", o.Batch, buildstatus.MaxBatch)
	}
	bench.Default(&o.Size, 2)
	if o.Size > buildstatus.MaxPlatforms {
		return fmt.Errorf("buildstatusbench: size %d exceeds %d platforms", o.Size, buildstatus.MaxPlatforms)
	}
	bench.Default(&o.Builds, 10000)
	o.Builds = max(o.Builds, o.Batch)
	bench.Default(&o.TTL, time.Hour)
	return nil
}

// Run seeds the builds under a fresh namespace, measures get, save and batch-get and, with
// opts.Cache, get_cached and batch_get_cached (the same reads through the client-side cache,
// on the seeded working set), the cache's staleness and its memory per build; it removes the
// keys (unless Keep) and returns what it measured.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	keys := buildstatus.NewKeys(redstate.Prefix(bench.Namespace()+"-", ""))
	store, err := redisstore.New(opts.Client, redisstore.Options{Keys: keys, TTL: opts.TTL})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := store.Ping(ctx); err != nil {
		return nil, err
	}
	w := &workload{opts: opts, keys: keys, store: store}
	if opts.Cache != nil {
		if w.cached, err = redisstore.New(opts.Client, redisstore.Options{Keys: keys, TTL: opts.TTL, Cache: opts.Cache}); err != nil {
			return nil, err
		}
		defer w.cached.Close()
	}
	if !opts.Keep {
		defer opts.Cleanup(ctx, keys.Prefix, time.Minute)
	}
	opts.Progressf("seeding %d builds (%d platforms each) under %s\n", opts.Builds, opts.Size, keys.Prefix)
	if err := w.seed(ctx); err != nil {
		return nil, err
	}
	want := func(name string) bool { return len(opts.Ops) == 0 || slices.Contains(opts.Ops, name) }
	report := &Report{}
	if w.cached != nil && want("memory") { // first, while no other cache holds the builds
		if report.Memory, err = w.memory(ctx); err != nil {
			return report, err
		}
	}
	var pairs []bench.Pair
	for _, p := range []bench.Pair{
		{Name: "get", Ours: w.getOurs, Baseline: w.getRaw},
		{Name: "save", Ours: w.saveOurs, Baseline: w.saveRaw},
		{Name: "batch_get", Ours: w.batchOurs, Baseline: w.batchRaw},
	} {
		if want(p.Name) {
			pairs = append(pairs, p)
		}
	}
	if w.cached != nil && (want("get_cached") || want("batch_get_cached")) {
		// The cached reads are measured on a hot working set: a miss costs more than a plain
		// GET (CLIENT CACHING YES, MULTI, PTTL, GET, EXEC), which a first pass pays here.
		opts.Progressf("warming the client-side cache with the %d builds\n", len(w.ids))
		if err := w.readAll(ctx, w.cached); err != nil {
			return report, err
		}
	}
	if w.cached != nil {
		for _, p := range []bench.Pair{
			{Name: "get_cached", Ours: w.getCached, Baseline: w.getRaw},
			{Name: "batch_get_cached", Ours: w.batchCached, Baseline: w.batchRaw},
		} {
			if want(p.Name) {
				pairs = append(pairs, p)
			}
		}
	}
	suite := bench.Suite{Prefix: "buildstatus.", Baseline: "raw", Config: opts.Config(opts.Duration)}
	if report.Comparisons, err = suite.Run(ctx, pairs); err != nil {
		return report, err
	}
	if want("save_vs_dapr") {
		// Asked for by name it runs or fails; as part of every operation it is skipped where
		// it cannot run (Cluster, Sentinel, no peer source beside the binary).
		if reason := w.daprUnavailable(); reason != nil && len(opts.Ops) == 0 {
			opts.Progressf("save_vs_dapr skipped: %v\n", reason)
		} else if report.Dapr, err = w.saveVsDapr(ctx); err != nil {
			return report, fmt.Errorf("save_vs_dapr: %w", err)
		}
	}
	if w.cached == nil {
		return report, nil
	}
	if want("staleness") {
		if report.Staleness, err = w.staleness(ctx); err != nil {
			return report, err
		}
	}
	return report, nil
}
