// Package checkpointbench benchmarks the executor's Redis checkpoint store
// (executor/redisstate.Checkpoints) against raw go-redis commands on the same client in the
// same run:
//
//	put  Put (compare-and-set script, never-backwards check, encoding)  vs  SET key json PX ttl
//	get  Get (local cache validated by GETRANGE of the version prefix)   vs  GET key
//
// The baselines do no JSON work (pre-encoded values, pre-built keys). Every client owns its
// own tasks, so its Puts carry the right expected version and never conflict; gets pick random
// tasks.
package checkpointbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Target is the Redis client, the concurrent callers (default 16) and the progress writer.
	bench.Target
	// Duration is the measured time per operation and implementation (default 10s).
	Duration time.Duration
	// Tasks is the number of checkpoints seeded (default 1,000; at least Clients).
	Tasks int
	// Stages is the number of completed stages per checkpoint (default 5).
	Stages int
}

// Run seeds the checkpoints, measures put and get, removes the keys and returns the
// comparisons ("checkpoint.put", "checkpoint.get").
func Run(ctx context.Context, opts Options) (bench.Comparisons, error) {
	if err := opts.Prepare("checkpointbench", 16); err != nil {
		return nil, err
	}
	bench.Default(&opts.Duration, 10*time.Second)
	bench.Default(&opts.Tasks, 1000)
	opts.Tasks = max(opts.Tasks, opts.Clients)
	bench.Default(&opts.Stages, 5)
	prefix := bench.Namespace()
	keys := executor.MustKeys(redstate.Prefix("", prefix+"-executor"))
	ttl := time.Hour
	store, err := redisstate.NewCheckpoints(opts.Client, redisstate.Options{Keys: keys, TTL: ttl})
	if err != nil {
		return nil, err
	}
	defer opts.Cleanup(ctx, prefix, time.Minute)

	w := &workload{opts: opts, store: store, ttl: ttl}
	w.ids = make([]string, opts.Tasks)
	w.keys = make([]string, opts.Tasks)
	w.versions = make([]int64, opts.Tasks)
	w.cps = make([]executor.Checkpoint, opts.Tasks)
	w.raw = make([][]byte, opts.Tasks)
	now := time.Now()
	for i := range opts.Tasks {
		w.ids[i] = "task-" + strconv.Itoa(i)
		w.keys[i] = keys.Checkpoint(w.ids[i])
		cp := executor.Checkpoint{LastCompletedStageIndex: opts.Stages - 1, ContextData: map[string]string{"tenantId": "tenant-" + strconv.Itoa(i)}, SavedAt: now}
		for s := range opts.Stages {
			cp.CompletedStages = append(cp.CompletedStages, "stage-"+strconv.Itoa(s))
		}
		w.cps[i] = cp
		if w.raw[i], err = executor.EncodeCheckpoint(cp, 1); err != nil {
			return nil, err
		}
		if w.versions[i], err = store.Put(ctx, w.ids[i], cp, 0); err != nil {
			return nil, fmt.Errorf("seeding: %w", err)
		}
	}
	w.rngs = make([]*rand.Rand, opts.Clients)
	w.next = make([]int, opts.Clients)
	for c := range w.rngs {
		w.rngs[c] = rand.New(rand.NewPCG(uint64(c)+1, 0x9e3779b97f4a7c15))
		w.next[c] = c
	}
	suite := bench.Suite{Prefix: "checkpoint.", Baseline: "raw", Config: opts.Config(opts.Duration)}
	return suite.Run(ctx, []bench.Pair{
		{Name: "put", Ours: w.putOurs, Baseline: w.putRaw},
		{Name: "get", Ours: w.getOurs, Baseline: w.getRaw},
	})
}

// workload holds the seeded checkpoints.
type workload struct {
	opts     Options
	store    *redisstate.Checkpoints
	ttl      time.Duration
	ids      []string
	keys     []string
	versions []int64 // task i's version; only client i%Clients writes task i
	cps      []executor.Checkpoint
	raw      [][]byte
	rngs     []*rand.Rand
	next     []int // each client's next own task
}

// own returns client c's next task: c, c+Clients, c+2*Clients, … (wrapping).
func (w *workload) own(c int) int {
	i := w.next[c]
	if w.next[c] += w.opts.Clients; w.next[c] >= len(w.ids) {
		w.next[c] = c
	}
	return i
}

func (w *workload) putOurs(ctx context.Context, c int, _ int64) error {
	i := w.own(c)
	v, err := w.store.Put(ctx, w.ids[i], w.cps[i], w.versions[i])
	if err == nil {
		w.versions[i] = v
	} else if ctx.Err() != nil {
		// Cut off by the slice's end: the write may have landed; re-read the version.
		if cp, gerr := w.store.Get(context.WithoutCancel(ctx), w.ids[i]); gerr == nil {
			w.versions[i] = cp.Version
		}
	}
	return err
}

func (w *workload) putRaw(ctx context.Context, c int, _ int64) error {
	i := w.own(c)
	// A separate key: the raw SET must not clobber the versioned checkpoint.
	return w.opts.Client.Set(ctx, w.keys[i]+":raw", w.raw[i], w.ttl).Err()
}

func (w *workload) getOurs(ctx context.Context, c int, _ int64) error {
	_, err := w.store.Get(ctx, w.ids[w.rngs[c].IntN(len(w.ids))])
	return err
}

func (w *workload) getRaw(ctx context.Context, c int, _ int64) error {
	return w.opts.Client.Get(ctx, w.keys[w.rngs[c].IntN(len(w.ids))]).Err()
}
