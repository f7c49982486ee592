// Package buildstatusbench benchmarks the Redis build-status store (buildstatus/redisstore)
// against raw go-redis commands on the same client in the same run: get (Get vs GET), save
// (Save vs SET key json EX ttl) and batch-get (GetMany vs MGET). The baselines do no JSON work
// at all: GET returns bytes, SET writes pre-encoded bytes, so the ratio charges our store with
// everything it does beyond one round trip (decoding, ETag hashing, the save script's index
// and event writes).
package buildstatusbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Client is the Redis client shared by ours and the baseline (required).
	Client redis.UniversalClient
	// Clients is the number of concurrent callers (default 16).
	Clients int
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
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

func (o *Options) defaults() error {
	if o.Client == nil {
		return fmt.Errorf("buildstatusbench: a Redis client is required")
	}
	if o.Clients <= 0 {
		o.Clients = 16
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = buildstatus.MaxBatch
	}
	if o.Batch > buildstatus.MaxBatch {
		return fmt.Errorf("buildstatusbench: batch %d exceeds the store's limit %d", o.Batch, buildstatus.MaxBatch)
	}
	if o.Size <= 0 {
		o.Size = 2
	}
	if o.Size > buildstatus.MaxPlatforms {
		return fmt.Errorf("buildstatusbench: size %d exceeds %d platforms", o.Size, buildstatus.MaxPlatforms)
	}
	if o.Builds <= 0 {
		o.Builds = 10000
	}
	o.Builds = max(o.Builds, o.Batch)
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	return nil
}

// Run seeds the builds under a fresh namespace, measures get, save and batch-get, removes the
// keys (unless Keep) and returns the comparisons in that order.
func Run(ctx context.Context, opts Options) ([]bench.Comparison, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	ns := make([]byte, 6)
	_, _ = rand.Read(ns)
	keys := buildstatus.NewKeys("bench-"+hex.EncodeToString(ns)+"-", "")
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
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			n, cerr := bench.UnlinkPrefix(cctx, opts.Client, keys.Prefix)
			progressf(opts.Progress, "cleanup: unlinked %d keys under %s\n", n, keys.Prefix)
			if cerr != nil {
				progressf(opts.Progress, "cleanup failed: %v\n", cerr)
			}
		}()
	}
	progressf(opts.Progress, "seeding %d builds (%d platforms each) under %s\n", opts.Builds, opts.Size, keys.Prefix)
	if err := w.seed(ctx); err != nil {
		return nil, err
	}
	cfg := bench.Config{Clients: opts.Clients, Duration: opts.Duration, Progress: opts.Progress}
	var out []bench.Comparison
	for _, op := range []struct {
		name        string
		ours, basel bench.Op
	}{
		{"get", w.getOurs, w.getRaw},
		{"save", w.saveOurs, w.saveRaw},
		{"batch_get", w.batchOurs, w.batchRaw},
	} {
		if len(opts.Ops) > 0 && !slices.Contains(opts.Ops, op.name) {
			continue
		}
		progressf(opts.Progress, "%s: ours vs raw, %d clients, %s each, alternating\n", op.name, opts.Clients, opts.Duration)
		ours, raw := bench.RunPair(ctx, op.name+"/ours", op.name+"/raw", cfg, op.ours, op.basel)
		for _, r := range []*bench.Result{ours, raw} {
			if r.Errors > 0 {
				return out, fmt.Errorf("%s: %d operations failed, first: %w", r.Name, r.Errors, r.FirstErr)
			}
		}
		out = append(out, bench.Comparison{Name: "buildstatus." + op.name, Ours: ours, Baseline: raw})
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
