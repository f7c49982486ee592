// Package lockbench benchmarks the executor's Redis tenant lock (executor/redisstate.Locks)
// against github.com/bsm/redislock on the same client in the same run. One operation is one
// acquire+release cycle. Ours also issues a fencing token on every successful acquire (TIME, GET
// and SET of the fence counter in the acquire script); redislock issues none. Ours runs as serve
// runs it by default (executor.persistence.redis.lock-pipelining auto): its scripts are streamed
// through the client's full-duplex go-redis autopipeliner, so the calls of concurrent clients
// share one connection without waiting for each other (Options.BatchedLocks: in batches;
// Options.DirectLocks: each alone); redislock's commands go on the client itself, one round
// trip each.
//
// Each mode runs once per caller count (Options.Callers, e.g. 16 and 64), and the server's cost
// of each side is read around its slices: CPU per attempt (INFO cpu) and the commands it ran
// (INFO commandstats).
//
//   - cycle: uncontended, each client cycles its own key;
//   - contended: all clients cycle over 4 keys without retry; an attempt that finds the key
//     held is counted as failed, and the throughput is successful cycles per second.
package lockbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Target is the Redis client, the concurrent callers (default 16) and the progress writer.
	bench.Target
	// Callers lists the caller counts to measure, both modes at each (default: Target.Clients
	// alone).
	Callers []int
	// Duration is the measured time per mode and implementation (default 10s).
	Duration time.Duration
	// ContendedKeys is the number of keys of the contended mode (default 4).
	ContendedKeys int
	// DirectLocks sends each of ours' scripts alone on the client (redisstate
	// Options.DirectLocks: what serve does with lock-pipelining off or redis.durability on)
	// instead of through the client's autopipeliner.
	DirectLocks bool
	// BatchedLocks sends ours' scripts through the client's half-duplex autopipeliner
	// (redisstate Options.BatchedLocks: lock-pipelining batch) instead of streaming them.
	BatchedLocks bool
	// TTL is the lease of every acquisition (default 2s; locks are released at once, the TTL
	// only bounds a lock left behind by a call cut off at the end of a slice).
	TTL time.Duration
}

// Measurement is one mode's comparison at one caller count, its failed (lock busy) attempts
// and what the server spent on each side.
type Measurement struct {
	// Comparison holds the successful cycles of ours and of redislock.
	bench.Comparison
	// Callers is the number of concurrent callers.
	Callers int
	// OursBusy and BaselineBusy count attempts that found the lock held.
	OursBusy, BaselineBusy int64
	// OursServer and BaselineServer are the server's costs over each side's slices.
	OursServer, BaselineServer bench.SideCost
}

// OursAttempts and BaselineAttempts are each side's attempts: cycles plus busy attempts.
func (m Measurement) OursAttempts() int64 { return m.Ours.Ops + m.OursBusy }

// BaselineAttempts is redislock's attempts: cycles plus busy attempts.
func (m Measurement) BaselineAttempts() int64 { return m.Baseline.Ops + m.BaselineBusy }

// ResultLine formats m as
//
//	RESULT <name> ours=<cycles/s> baseline=<cycles/s> ratio=<x> p99_ms=<ours> baseline_p99_ms=<redislock>
//
// followed, for the contended mode, by ours_busy=<n> baseline_busy=<n>, then by
// clients=<callers> server_us=<ours> baseline_server_us=<redislock> cmd_us=<ours>
// baseline_cmd_us=<redislock> client_us=<ours> baseline_client_us=<redislock>: the server's
// CPU per attempt (INFO cpu), its time inside the calls per attempt (INFO commandstats) and
// the bench process's CPU per attempt, an attempt being a cycle or a busy try.
func (m Measurement) ResultLine() string {
	line := bench.ResultLine(m.Comparison)
	if m.OursBusy > 0 || m.BaselineBusy > 0 {
		line += fmt.Sprintf(" ours_busy=%d baseline_busy=%d", m.OursBusy, m.BaselineBusy)
	}
	oa, ba := m.OursAttempts(), m.BaselineAttempts()
	return line + fmt.Sprintf(" clients=%d server_us=%.1f baseline_server_us=%.1f cmd_us=%.1f baseline_cmd_us=%.1f client_us=%.1f baseline_client_us=%.1f",
		m.Callers, m.OursServer.CPUPer(oa), m.BaselineServer.CPUPer(ba), m.OursServer.CommandsPer(oa), m.BaselineServer.CommandsPer(ba),
		m.OursServer.ClientCPUPer(oa), m.BaselineServer.ClientCPUPer(ba))
}

// CommandLines returns two lines naming the commands each side made the server run, per
// attempt: "# <name> clients=<n> ours: evalsha 1.00×4.10µs, set 1.00×1.20µs, ...".
func (m Measurement) CommandLines() []string {
	line := func(side string, c bench.SideCost, attempts int64) string {
		return fmt.Sprintf("# %s clients=%d %s: %s", m.Name, m.Callers, side, c.CommandList(attempts))
	}
	return []string{line("ours", m.OursServer, m.OursAttempts()), line("redislock", m.BaselineServer, m.BaselineAttempts())}
}

// Measurements are a run's measurements; they print as a table and one ResultLine each.
type Measurements []Measurement

// Print implements bench.Printer.
func (ms Measurements) Print(w io.Writer) error {
	cs := make([]bench.Comparison, len(ms))
	for i, m := range ms {
		cs[i] = m.Comparison
	}
	if err := bench.PrintComparisons(w, cs, func(i int) string { return ms[i].ResultLine() }); err != nil {
		return err
	}
	var lines []string
	for _, m := range ms {
		lines = append(lines, m.CommandLines()...)
	}
	return bench.PrintLines(w, lines)
}

// errBusy marks an attempt that found the lock held (counted, not timed).
var errBusy = errors.New("lock busy")

// Run measures both modes at each caller count and removes the bench's keys. It fails if any
// call hit a Redis error.
func Run(ctx context.Context, opts Options) (Measurements, error) {
	if err := opts.Prepare("lockbench", 16); err != nil {
		return nil, err
	}
	if len(opts.Callers) == 0 {
		opts.Callers = []int{opts.Clients}
	}
	for _, n := range opts.Callers {
		if n <= 0 {
			return nil, fmt.Errorf("lockbench: caller counts must be positive, got %v", opts.Callers)
		}
	}
	opts.Clients = slices.Max(opts.Callers)
	bench.Default(&opts.Duration, 10*time.Second)
	bench.Default(&opts.ContendedKeys, 4)
	bench.Default(&opts.TTL, 2*time.Second)
	prefix := bench.Namespace()
	keys := executor.MustKeys(redstate.Prefix("", prefix+"-executor"))
	ours, err := redisstate.NewLocks(opts.Client, redisstate.Options{Keys: keys, DirectLocks: opts.DirectLocks, BatchedLocks: opts.BatchedLocks})
	if err != nil {
		return nil, err
	}
	base := redislock.New(opts.Client)
	defer opts.Cleanup(ctx, prefix, time.Minute)

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
	pairs := []bench.Pair{
		{Name: "lock.cycle",
			Ours:     oursCycle(func(c int, _ int64) string { return ownTenant[c] }),
			Baseline: baseCycle(func(c int, _ int64) string { return ownKey[c] })},
		{Name: "lock.contended",
			Ours:     oursCycle(func(c int, i int64) string { return sharedTenant[pick(c, i)] }),
			Baseline: baseCycle(func(c int, i int64) string { return sharedKey[pick(c, i)] })},
	}
	var out Measurements
	for _, callers := range opts.Callers {
		for _, p := range pairs {
			cfg := opts.Config(opts.Duration)
			cfg.Clients = callers
			opts.Progressf("%s: ours vs bsm/redislock, %d clients, %s each, alternating\n", p.Name, callers, opts.Duration)
			o, b, oc, bc, err := bench.RunPairCosted(ctx, opts.Target, p.Name+"/ours", p.Name+"/redislock", cfg, p.Ours, p.Baseline)
			if err != nil {
				return out, err
			}
			if n := hardErrs.Load(); n > 0 {
				return out, fmt.Errorf("%s: %d Redis errors, first: %v", p.Name, n, firstHard.Load())
			}
			m := Measurement{Comparison: bench.Comparison{Name: p.Name, Ours: o, Baseline: b}, Callers: callers,
				OursBusy: o.Errors, BaselineBusy: b.Errors, OursServer: oc, BaselineServer: bc}
			opts.Progressf("  %s\n", m.ResultLine())
			out = append(out, m)
			if err := ctx.Err(); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}
