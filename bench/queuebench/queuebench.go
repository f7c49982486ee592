// Package queuebench benchmarks the Redis job queue (queue/redisqueue driven by queue.Worker)
// against github.com/hibiken/asynq on the same Redis, through the same go-redis client, in the
// same run. Each implementation gets a fresh queue, N jobs are enqueued by Clients concurrent
// producers (enqueue throughput and per-enqueue latency), then one server with Concurrency
// no-op handlers drains them (processing throughput = N / time from the first dequeue to the
// last settled job).
//
// Ours: queue.Worker (Concurrency goroutines, or several Workers totalling it) on a
// redisqueue.Broker under a unique key namespace; each job is one Dequeue (dequeue script or
// BLMOVE) and one Ack. The end of the drain is the last Ack (counted by a queue.Observer), and
// the queue's Stats must then show nothing pending or running.
//
// Baseline: asynq.Client.EnqueueContext into a unique asynq queue, then asynq.Server with the
// same Concurrency, that queue only, asynq's default intervals (TaskCheckInterval 1s, ...),
// no unique, retention, deadline or group options. asynq offers no hook after a task is marked
// done, so its drain ends when the handler has been called N times; the Inspector must then
// show the queue empty. That favours asynq by at most one round trip in N jobs.
//
// Enqueue with options (CaseDelayed, CaseUnique): N jobs with the same payloads on both sides,
// ours by queue.Producer.EnqueueJob with Delay or UniqueFor, asynq's by Client.EnqueueContext
// with ProcessIn or Unique, each side on a fresh queue; besides throughput and latency, the
// Redis server's µs per enqueue from INFO commandstats.
package queuebench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/redisconn"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Client is the Redis client shared by ours and asynq (required): a *redis.Client or a
	// *redis.ClusterClient.
	Client redis.UniversalClient
	// Jobs is the number of jobs enqueued and processed per implementation and round
	// (default 100,000).
	Jobs int
	// Concurrency is the number of jobs processed at once (default 10): our Workers'
	// Concurrency in total, asynq's Config.Concurrency.
	Concurrency int
	// Clients is the number of concurrent producers while enqueuing (default 10).
	Clients int
	// Workers is the number of queue.Workers (each its own consumer) that share Concurrency
	// (default 1).
	Workers int
	// Rounds is the number of rounds; round i runs ours then asynq when i is even and asynq
	// then ours when odd, so drift hits both alike. Results are summed (default 1).
	Rounds int
	// BlockTimeout is our Worker's Dequeue blocking timeout (default 1s: only reached once the
	// queue is drained; it bounds nothing while jobs are waiting).
	BlockTimeout time.Duration
	// PromoteInterval is our Worker's maintenance interval (default 1s, queue's default).
	PromoteInterval time.Duration
	// StallTimeout fails a drain that makes no progress for this long (default 30s).
	StallTimeout time.Duration
	// Cases selects what runs, in AllCases order: CaseProcess (enqueue, then drain),
	// CaseDelayed and CaseUnique (enqueue with options) (default: all).
	Cases []string
	// Keep leaves the benchmark's keys in Redis.
	Keep bool
	// Progress receives progress lines and warnings of both implementations (nil: none).
	Progress io.Writer
}

func (o *Options) defaults() error {
	if o.Client == nil {
		return fmt.Errorf("queuebench: a Redis client is required")
	}
	if o.Jobs <= 0 {
		o.Jobs = 100000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.Clients <= 0 {
		o.Clients = 10
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Workers > o.Concurrency {
		return fmt.Errorf("queuebench: %d workers cannot share concurrency %d", o.Workers, o.Concurrency)
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.BlockTimeout <= 0 {
		o.BlockTimeout = time.Second
	}
	if o.PromoteInterval <= 0 {
		o.PromoteInterval = time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 30 * time.Second
	}
	if len(o.Cases) == 0 {
		o.Cases = AllCases
	}
	for _, c := range o.Cases {
		if !slices.Contains(AllCases, c) {
			return fmt.Errorf("queuebench: unknown case %q (cases: %s)", c, strings.Join(AllCases, ", "))
		}
	}
	return nil
}

// runs tells whether the options select case c.
func (o *Options) runs(c string) bool { return slices.Contains(o.Cases, c) }

// Report is the outcome of a run: enqueue and processing, and enqueue with options, ours vs
// asynq. A case the run did not select is nil (Enqueue and Throughput: zero).
type Report struct {
	// Enqueue compares enqueue throughput and latency (one Result per implementation, with
	// every enqueue's latency).
	Enqueue bench.Comparison
	// Throughput compares processing throughput (Ops jobs over Elapsed from the first dequeue
	// to the last settled job, the queue filled beforehand: the settle-only figure; no
	// latencies).
	Throughput bench.Comparison
	// OursProcess and BaselineProcess are what each side's processing phases cost, summed over
	// rounds (bench.SideCost.Measure around each drain, from starting the server to its
	// shutdown): the Redis server's CPU time and commandstats, and this process's CPU time.
	OursProcess, BaselineProcess bench.SideCost
	// Delayed compares the enqueue of jobs delayed by OptionDelay (CaseDelayed).
	Delayed *OptionEnqueue
	// Unique compares the enqueue of jobs locked for OptionUniqueFor on their distinct
	// payloads (CaseUnique).
	Unique *OptionEnqueue
}

// Result names.
const (
	enqueueName    = "queue.enqueue"
	throughputName = "queue.throughput"
)

// Run measures ours and asynq for opts.Rounds rounds, removes every key both created (unless
// Keep) and returns the report. On error the report holds what was measured so far.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	tag := hex.EncodeToString(id)
	o, err := newOurs(opts, "bench-"+tag+":", "queue-"+tag)
	if err != nil {
		return nil, err
	}
	a := newAsynq(opts, "bench-"+tag)
	if !opts.Keep {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			for _, c := range []interface {
				cleanup(context.Context) (int64, error)
				name() string
			}{o, a} {
				n, cerr := c.cleanup(cctx)
				progressf(opts.Progress, "cleanup: unlinked %d keys of %s\n", n, c.name())
				if cerr != nil {
					progressf(opts.Progress, "cleanup of %s failed: %v\n", c.name(), cerr)
				}
			}
		}()
	}
	progressf(opts.Progress, "queue bench: %d jobs, %d producers, concurrency %d (%d worker(s)), %d round(s)\n  ours:  %s\n  asynq: %s\n",
		opts.Jobs, opts.Clients, opts.Concurrency, opts.Workers, opts.Rounds, o.describe(), a.describe())

	rep := &Report{}
	if opts.runs(CaseProcess) {
		rep.Enqueue = bench.Comparison{Name: enqueueName, Ours: &bench.Result{Name: "enqueue/ours"}, Baseline: &bench.Result{Name: "enqueue/asynq"}}
		rep.Throughput = bench.Comparison{Name: throughputName, Ours: &bench.Result{Name: "process/ours"}, Baseline: &bench.Result{Name: "process/asynq"}}
	}
	type impl struct {
		name     string
		run      func(context.Context, int, *bench.SideCost) (enq, proc *bench.Result, err error)
		enq, prc *bench.Result
		cost     *bench.SideCost
	}
	ours := impl{"ours", o.round, rep.Enqueue.Ours, rep.Throughput.Ours, &rep.OursProcess}
	base := impl{"asynq", a.round, rep.Enqueue.Baseline, rep.Throughput.Baseline, &rep.BaselineProcess}
	for r := range opts.Rounds {
		if !opts.runs(CaseProcess) {
			break
		}
		order := []impl{ours, base}
		if r%2 == 1 {
			order = []impl{base, ours}
		}
		for _, im := range order {
			progressf(opts.Progress, "round %d/%d: %s\n", r+1, opts.Rounds, im.name)
			enq, proc, err := im.run(ctx, r, im.cost)
			if enq != nil {
				im.enq.Merge(enq)
			}
			if proc != nil {
				im.prc.Merge(proc)
			}
			if err != nil {
				return rep, fmt.Errorf("%s, round %d: %w", im.name, r+1, err)
			}
			if err := ctx.Err(); err != nil {
				return rep, err
			}
		}
	}
	for _, c := range []struct {
		name, result string
		out          **OptionEnqueue
	}{{CaseDelayed, delayedName, &rep.Delayed}, {CaseUnique, uniqueName, &rep.Unique}} {
		if !opts.runs(c.name) {
			continue
		}
		*c.out = newOptionEnqueue(c.result, c.name)
		if err := runOption(ctx, opts, o, a, optionCases[c.name], *c.out); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// ThroughputLine formats the processing comparison as
//
//	RESULT queue.throughput ours=<jobs/s> baseline=<jobs/s> ratio=<ours/baseline>
//
// with bench.ResultLine's number formats (rates without decimals, the ratio with two).
func ThroughputLine(c bench.Comparison) string {
	return fmt.Sprintf("RESULT %s ours=%.0f baseline=%.0f ratio=%.2f", c.Name, c.Ours.OpsPerSec(), c.Baseline.OpsPerSec(), c.Ratio())
}

// ProcessCostLine formats what the processing phases cost per job as
//
//	RESULT queue.process_cost redis_cpu_us=<ours> baseline_redis_cpu_us=<asynq> redis_us=<ours> baseline_redis_us=<asynq> client_cpu_us=<ours> baseline_client_cpu_us=<asynq>
//
// redis_cpu_us being the Redis server's CPU µs per job (INFO cpu), redis_us its µs per job in
// the commands the side sent (INFO commandstats) and client_cpu_us this process's CPU µs per
// job (getrusage: the queue's client code, go-redis and the bench's bookkeeping).
func ProcessCostLine(r *Report) string {
	ours, base := r.Throughput.Ours.Ops, r.Throughput.Baseline.Ops
	return fmt.Sprintf("RESULT queue.process_cost redis_cpu_us=%.2f baseline_redis_cpu_us=%.2f redis_us=%.2f baseline_redis_us=%.2f client_cpu_us=%.2f baseline_client_cpu_us=%.2f",
		r.OursProcess.CPUPer(ours), r.BaselineProcess.CPUPer(base), r.OursProcess.CommandsPer(ours), r.BaselineProcess.CommandsPer(base),
		r.OursProcess.ClientCPUPer(ours), r.BaselineProcess.ClientCPUPer(base))
}

// EnqueueLine formats the enqueue comparison as
//
//	RESULT queue.enqueue ours=<jobs/s> baseline=<jobs/s> ratio=<ours/baseline> p99_ms=<ours>
//
// with bench.ResultLine's number formats (milliseconds with three decimals).
func EnqueueLine(c bench.Comparison) string {
	return fmt.Sprintf("RESULT %s ours=%.0f baseline=%.0f ratio=%.2f p99_ms=%.3f", c.Name, c.Ours.OpsPerSec(), c.Baseline.OpsPerSec(), c.Ratio(), ms(c.Ours.Percentile(99)))
}

// ResultLines returns the report's RESULT lines: throughput, the processing cost per job and
// enqueue (when the process case ran), then enqueue delayed and unique (when they ran).
func (r *Report) ResultLines() []string {
	var lines []string
	if r.Throughput.Ours != nil {
		lines = append(lines, ThroughputLine(r.Throughput), ProcessCostLine(r), EnqueueLine(r.Enqueue))
	}
	for _, c := range []*OptionEnqueue{r.Delayed, r.Unique} {
		if c != nil {
			lines = append(lines, OptionLine(*c))
		}
	}
	return lines
}

// PrintTable writes one row per phase and implementation: jobs, seconds, jobs/s, and for
// the enqueues the p50/p99/p99.9 latency; errors.
func PrintTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\timpl\tjobs\tseconds\tjobs/s\tp50_ms\tp99_ms\tp999_ms\terrors\t")
	type row struct {
		phase, impl string
		res         *bench.Result
		latencies   bool
	}
	var rows []row
	if r.Throughput.Ours != nil {
		rows = append(rows,
			row{"enqueue", "ours", r.Enqueue.Ours, true},
			row{"enqueue", "asynq", r.Enqueue.Baseline, true},
			row{"process", "ours", r.Throughput.Ours, false},
			row{"process", "asynq", r.Throughput.Baseline, false})
	}
	for _, c := range []struct {
		phase string
		c     *OptionEnqueue
	}{{"enqueue_delayed", r.Delayed}, {"enqueue_unique", r.Unique}} {
		if c.c != nil {
			rows = append(rows, row{c.phase, "ours", c.c.Ours, true}, row{c.phase, "asynq", c.c.Baseline, true})
		}
	}
	for _, row := range rows {
		lat := "-\t-\t-"
		if row.latencies {
			lat = fmt.Sprintf("%.3f\t%.3f\t%.3f", ms(row.res.Percentile(50)), ms(row.res.Percentile(99)), ms(row.res.Percentile(99.9)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.0f\t%s\t%d\t\n", row.phase, row.impl, row.res.Ops, row.res.Elapsed.Seconds(),
			row.res.OpsPerSec(), lat, row.res.Errors)
	}
	return tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// drain tracks one processing phase: handler calls, settled jobs, the first and last instant.
type drain struct {
	jobs     int64
	handled  atomic.Int64 // handler calls
	settled  atomic.Int64 // jobs finished for good (ours: acked; asynq: handled)
	firstNs  atomic.Int64 // UnixNano of the first handler call
	lastNs   atomic.Int64 // UnixNano of the jobs-th settlement
	failed   atomic.Int64 // jobs not settled as done (ours: retried, dead, dropped, lost)
	complete chan struct{}
}

func newDrain(jobs int) *drain { return &drain{jobs: int64(jobs), complete: make(chan struct{})} }

// started records a handler call.
func (d *drain) started() {
	if d.firstNs.Load() == 0 {
		d.firstNs.CompareAndSwap(0, time.Now().UnixNano())
	}
	d.handled.Add(1)
}

// finished records a settled job; the jobs-th one ends the phase.
func (d *drain) finished() {
	if d.settled.Add(1) == d.jobs {
		d.lastNs.Store(time.Now().UnixNano())
		close(d.complete)
	}
}

// wait blocks until the phase completes, printing progress once per second as name. It fails
// when ctx ends or nothing is settled for stall.
func (d *drain) wait(ctx context.Context, name string, progress io.Writer, stall time.Duration) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start := time.Now()
	last, lastChange := int64(-1), time.Now()
	for {
		select {
		case <-d.complete:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case now := <-t.C:
			n := d.settled.Load()
			progressf(progress, "  %s: %d handled, %d done in %.0fs (%.0f jobs/s)\n", name, d.handled.Load(), n,
				now.Sub(start).Seconds(), float64(n)/now.Sub(start).Seconds())
			if n != last {
				last, lastChange = n, now
			} else if now.Sub(lastChange) >= stall {
				return fmt.Errorf("%s stalled: %d of %d jobs done, none for %s", name, n, d.jobs, stall)
			}
		}
	}
}

// result returns the phase's Result: jobs over first handler call → last settlement.
func (d *drain) result(name string) *bench.Result {
	el := time.Duration(d.lastNs.Load() - d.firstNs.Load())
	return &bench.Result{Name: name, Ops: d.jobs, Errors: d.failed.Load(), Elapsed: max(el, 1)}
}

// costSummary describes one processing phase's cost per job of proc (nil: none): server CPU,
// client CPU and every command with its calls per job and µs per call.
func costSummary(c bench.SideCost, proc *bench.Result) string {
	var jobs int64
	if proc != nil {
		jobs = proc.Ops
	}
	return fmt.Sprintf("server CPU %.2fµs/job, client CPU %.2fµs/job; %s", c.CPUPer(jobs), c.ClientCPUPer(jobs), c.CommandList(jobs))
}

// addCost adds c to into.
func addCost(into *bench.SideCost, c bench.SideCost) {
	into.CPU += c.CPU
	into.ClientCPU += c.ClientCPU
	if into.Commands == nil {
		into.Commands = redisconn.CommandStats{}
	}
	for name, s := range c.Commands {
		o := into.Commands[name]
		into.Commands[name] = redisconn.CommandStat{Calls: o.Calls + s.Calls, Usec: o.Usec + s.Usec}
	}
}
