// Package buildstatusbench benchmarks the Redis build-status store (buildstatus/redisstore)
// against raw go-redis commands on the same client in the same run: get (Get vs GET), save
// (Save vs SET key json EX ttl) and batch-get (GetMany vs MGET). The baselines do no JSON work
// at all: GET returns bytes, SET writes pre-encoded bytes, so the ratio charges our store with
// everything it does beyond one round trip (decoding, ETag hashing, the save script's index
// and event writes).
package buildstatusbench

import (
	"context"
	"fmt"
	"slices"
	"time"

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
	// Ops selects operations by name ("get", "save", "batch_get"); empty means all.
	Ops []string
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

// Run seeds the builds under a fresh namespace, measures get, save and batch-get, removes the
// keys (unless Keep) and returns the comparisons in that order.
func Run(ctx context.Context, opts Options) (bench.Comparisons, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	keys := buildstatus.NewKeys(bench.Namespace()+"-", "")
	store, err := redisstore.New(opts.Client, redisstore.Options{Keys: keys, TTL: opts.TTL})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := store.Ping(ctx); err != nil {
		return nil, err
	}
	w := &workload{opts: opts, keys: keys, store: store}
	if !opts.Keep {
		defer opts.Cleanup(ctx, keys.Prefix, time.Minute)
	}
	opts.Progressf("seeding %d builds (%d platforms each) under %s\n", opts.Builds, opts.Size, keys.Prefix)
	if err := w.seed(ctx); err != nil {
		return nil, err
	}
	var pairs []bench.Pair
	for _, p := range []bench.Pair{
		{Name: "get", Ours: w.getOurs, Baseline: w.getRaw},
		{Name: "save", Ours: w.saveOurs, Baseline: w.saveRaw},
		{Name: "batch_get", Ours: w.batchOurs, Baseline: w.batchRaw},
	} {
		if len(opts.Ops) == 0 || slices.Contains(opts.Ops, p.Name) {
			pairs = append(pairs, p)
		}
	}
	suite := bench.Suite{Prefix: "buildstatus.", Baseline: "raw", Config: opts.Config(opts.Duration)}
	return suite.Run(ctx, pairs)
}
