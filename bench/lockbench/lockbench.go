// Package lockbench benchmarks the executor's Redis tenant lock (executor/redisstate.Locks)
// against github.com/bsm/redislock on the same client in the same run. One operation is one
// acquire+release cycle. Ours also issues a fencing token (INCR in the acquire script) on
// every successful acquire; redislock issues none.
//
//   - cycle: uncontended, each client cycles its own key;
//   - contended: all clients cycle over 4 keys without retry; an attempt that finds the key
//     held is counted as failed, and the throughput is successful cycles per second.
package lockbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Client is the Redis client shared by ours and the baseline (required).
	Client redis.UniversalClient
	// Clients is the number of concurrent callers (default 16).
	Clients int
	// Duration is the measured time per mode and implementation (default 10s).
	Duration time.Duration
	// ContendedKeys is the number of keys of the contended mode (default 4).
	ContendedKeys int
	// TTL is the lease of every acquisition (default 2s; locks are released at once, the TTL
	// only bounds a lock left behind by a call cut off at the end of a slice).
	TTL time.Duration
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// Measurement is one mode's comparison plus its failed (lock busy) attempts.
type Measurement struct {
	// Comparison holds the successful cycles of ours and of redislock.
	bench.Comparison
	// OursBusy and BaselineBusy count attempts that found the lock held.
	OursBusy, BaselineBusy int64
}

// ResultLine formats m as
//
//	RESULT <name> ours=<cycles/s> baseline=<cycles/s> ratio=<x> p99_ms=<ours> baseline_p99_ms=<redislock>
//
// followed, for the contended mode, by ours_busy=<n> baseline_busy=<n>.
func (m Measurement) ResultLine() string {
	line := bench.ResultLine(m.Comparison)
	if m.OursBusy > 0 || m.BaselineBusy > 0 {
		line += fmt.Sprintf(" ours_busy=%d baseline_busy=%d", m.OursBusy, m.BaselineBusy)
	}
	return line
}

// errBusy marks an attempt that found the lock held (counted, not timed).
var errBusy = errors.New("lock busy")

// Run measures both modes and removes the bench's keys. It fails if any call hit a Redis error.
func Run(ctx context.Context, opts Options) ([]Measurement, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("lockbench: a Redis client is required")
	}
	if opts.Clients <= 0 {
		opts.Clients = 16
	}
	if opts.Duration <= 0 {
		opts.Duration = 10 * time.Second
	}
	if opts.ContendedKeys <= 0 {
		opts.ContendedKeys = 4
	}
	if opts.TTL <= 0 {
		opts.TTL = 2 * time.Second
	}
	ns := make([]byte, 6)
	_, _ = rand.Read(ns)
	prefix := "bench-" + hex.EncodeToString(ns)
	keys := executor.MustKeys(prefix + "-executor")
	ours, err := redisstate.NewLocks(opts.Client, redisstate.Options{Keys: keys})
	if err != nil {
		return nil, err
	}
	base := redislock.New(opts.Client)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		n, cerr := bench.UnlinkPrefix(cctx, opts.Client, prefix)
		progressf(opts.Progress, "cleanup: unlinked %d keys under %s\n", n, prefix)
		if cerr != nil {
			progressf(opts.Progress, "cleanup failed: %v\n", cerr)
		}
	}()

	var hardErrs atomic.Int64
	var firstHard atomic.Value
	hard := func(ctx context.Context, err error) error {
		if ctx.Err() != nil {
			return err // the slice ended during the call: not a Redis failure
		}
		if hardErrs.Add(1) == 1 {
			firstHard.Store(err)
		}
		return err
	}
	owners := make([]string, opts.Clients)
	for c := range owners {
		owners[c] = "client-" + strconv.Itoa(c)
	}
	oursCycle := func(tenant func(c int, i int64) string) bench.Op {
		return func(ctx context.Context, c int, i int64) error {
			t := tenant(c, i)
			lease, ok, err := ours.TryAcquire(ctx, t, owners[c], opts.TTL)
			if err != nil {
				return hard(ctx, err)
			}
			if !ok {
				return errBusy
			}
			// The release completes even if the run's slice ends meanwhile: a lock left held
			// would make the next slice's first attempt on this key fail.
			if err := ours.Release(context.WithoutCancel(ctx), t, lease.Token); err != nil {
				return hard(ctx, err)
			}
			return nil
		}
	}
	baseCycle := func(key func(c int, i int64) string) bench.Op {
		return func(ctx context.Context, c int, i int64) error {
			l, err := base.Obtain(ctx, key(c, i), opts.TTL, nil)
			if errors.Is(err, redislock.ErrNotObtained) {
				return errBusy
			}
			if err != nil {
				return hard(ctx, err)
			}
			if err := l.Release(context.WithoutCancel(ctx)); err != nil {
				return hard(ctx, err)
			}
			return nil
		}
	}
	ownTenant := make([]string, opts.Clients)
	ownKey := make([]string, opts.Clients)
	for c := range opts.Clients {
		ownTenant[c] = "tenant-" + strconv.Itoa(c)
		ownKey[c] = prefix + "-redislock:own:" + strconv.Itoa(c)
	}
	sharedTenant := make([]string, opts.ContendedKeys)
	sharedKey := make([]string, opts.ContendedKeys)
	for k := range opts.ContendedKeys {
		sharedTenant[k] = "shared-" + strconv.Itoa(k)
		sharedKey[k] = prefix + "-redislock:shared:" + strconv.Itoa(k)
	}
	pick := func(c int, i int64) int { return int((int64(c) + i) % int64(opts.ContendedKeys)) }
	modes := []struct {
		name        string
		ours, basel bench.Op
	}{
		{"lock.cycle",
			oursCycle(func(c int, _ int64) string { return ownTenant[c] }),
			baseCycle(func(c int, _ int64) string { return ownKey[c] })},
		{"lock.contended",
			oursCycle(func(c int, i int64) string { return sharedTenant[pick(c, i)] }),
			baseCycle(func(c int, i int64) string { return sharedKey[pick(c, i)] })},
	}
	cfg := bench.Config{Clients: opts.Clients, Duration: opts.Duration, Progress: opts.Progress}
	var out []Measurement
	for _, m := range modes {
		progressf(opts.Progress, "%s: ours vs bsm/redislock, %d clients, %s each, alternating\n", m.name, opts.Clients, opts.Duration)
		o, b := bench.RunPair(ctx, m.name+"/ours", m.name+"/redislock", cfg, m.ours, m.basel)
		if n := hardErrs.Load(); n > 0 {
			return out, fmt.Errorf("%s: %d Redis errors, first: %v", m.name, n, firstHard.Load())
		}
		out = append(out, Measurement{Comparison: bench.Comparison{Name: m.name, Ours: o, Baseline: b}, OursBusy: o.Errors, BaselineBusy: b.Errors})
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
