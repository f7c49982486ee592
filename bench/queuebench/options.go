package queuebench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/report"
)

// The cases Options.Cases selects.
const (
	// CaseProcess is the plain enqueue followed by the drain (queue.enqueue, queue.throughput).
	CaseProcess = "process"
	// CaseDelayed is the enqueue of delayed jobs (queue.enqueue_delayed).
	CaseDelayed = "delayed"
	// CaseUnique is the enqueue of jobs with a unique lock (queue.enqueue_unique).
	CaseUnique = "unique"
)

// AllCases lists every case in the order Run runs them.
var AllCases = []string{CaseProcess, CaseDelayed, CaseUnique}

// Result names of the enqueue-with-options cases.
const (
	delayedName = "queue.enqueue_delayed"
	uniqueName  = "queue.enqueue_unique"
)

// OptionDelay is the delay of the delayed case's jobs, and OptionUniqueFor the unique window of
// the unique case's: long enough that nothing becomes due or unlocked during a run.
const (
	OptionDelay     = time.Hour
	OptionUniqueFor = time.Hour
)

// OptionEnqueue is the outcome of one enqueue-with-options case: throughput and latency (the
// Comparison) and the Redis server's commandstats over each side's enqueue phases.
type OptionEnqueue struct {
	bench.Comparison
	// OursRedis and BaselineRedis are the commandstats deltas of the phases, summed over
	// rounds.
	OursRedis, BaselineRedis redisconn.CommandStats
	// OursCPU and BaselineCPU are the server's CPU time over the phases
	// (redisconn.ServerCPU), summed over rounds: unlike commandstats they include reading,
	// parsing and answering the requests, which a batch of enqueues shares.
	OursCPU, BaselineCPU time.Duration
}

// CPUUsPerOp returns the server CPU microseconds per enqueue (0 without enqueues).
func CPUUsPerOp(cpu time.Duration, ops int64) float64 {
	if ops == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(ops)
}

// RedisUsPerOp returns the server microseconds per enqueue of the commands a side sent
// (CommandStats.ClientUsec over its enqueues; 0 without enqueues).
func RedisUsPerOp(s redisconn.CommandStats, ops int64) float64 {
	if ops == 0 {
		return 0
	}
	return float64(s.ClientUsec()) / float64(ops)
}

// OptionLine formats an enqueue-with-options case as
//
//	RESULT <name> ours=<jobs/s> baseline=<jobs/s> ratio=<ours/baseline> p99_ms=<ours> redis_us=<ours> baseline_redis_us=<asynq> redis_cpu_us=<ours> baseline_redis_cpu_us=<asynq>
//
// redis_us being the server µs per enqueue in commands from INFO commandstats (RedisUsPerOp),
// redis_cpu_us its CPU µs per enqueue from INFO cpu (CPUUsPerOp).
func OptionLine(c OptionEnqueue) string {
	return fmt.Sprintf("%s redis_us=%.2f baseline_redis_us=%.2f redis_cpu_us=%.2f baseline_redis_cpu_us=%.2f", EnqueueLine(c.Comparison),
		RedisUsPerOp(c.OursRedis, c.Ours.Ops), RedisUsPerOp(c.BaselineRedis, c.Baseline.Ops),
		CPUUsPerOp(c.OursCPU, c.Ours.Ops), CPUUsPerOp(c.BaselineCPU, c.Baseline.Ops))
}

// optionCase is one enqueue-with-options case: how each side enqueues job i on its queue.
type optionCase struct {
	name  string // CaseDelayed, CaseUnique
	ours  func(ctx context.Context, p *queue.Producer, payload json.RawMessage) error
	asynq func(ctx context.Context, c *asynq.Client, queueName string, payload []byte) error
	// oursCount and asynqCount read how many jobs the case left on the queue.
	oursCount  func(queue.Stats) int64
	asynqCount func(*asynq.QueueInfo) int
}

var optionCases = map[string]optionCase{
	CaseDelayed: {
		name: CaseDelayed,
		ours: func(ctx context.Context, p *queue.Producer, payload json.RawMessage) error {
			_, _, err := p.EnqueueJob(ctx, payload, queue.JobOptions{Delay: OptionDelay})
			return err
		},
		asynq: func(ctx context.Context, c *asynq.Client, q string, payload []byte) error {
			_, err := c.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, payload), asynq.Queue(q), asynq.ProcessIn(OptionDelay))
			return err
		},
		oursCount:  func(s queue.Stats) int64 { return s.Scheduled },
		asynqCount: func(qi *asynq.QueueInfo) int { return qi.Scheduled },
	},
	CaseUnique: {
		name: CaseUnique,
		// No ID: the lock is on the payload's hash, as asynq's Unique is.
		ours: func(ctx context.Context, p *queue.Producer, payload json.RawMessage) error {
			_, _, err := p.EnqueueJob(ctx, payload, queue.JobOptions{UniqueFor: OptionUniqueFor})
			return err
		},
		asynq: func(ctx context.Context, c *asynq.Client, q string, payload []byte) error {
			_, err := c.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, payload), asynq.Queue(q), asynq.Unique(OptionUniqueFor))
			return err
		},
		oursCount:  func(s queue.Stats) int64 { return s.Pending },
		asynqCount: func(qi *asynq.QueueInfo) int { return qi.Pending },
	},
}

// optionPayload is job i's payload on both sides: a seed-format report job, distinct per i.
func optionPayload(i int64) ([]byte, error) {
	return queue.EncodeMessage(report.NewJob(i, time.Now(), nil))
}

// optionQueue names a case's queue of one round: "<base>-<case>-r<round>".
func optionQueue(base, name string, round int) string {
	return fmt.Sprintf("%s-%s-r%d", base, name, round)
}

// enqueueOption runs one side's enqueue phase of case c in round r: opts.Jobs enqueues by
// opts.Clients producers on a fresh queue, then checks that every job is there. It returns
// the phase's result and the server's commandstats and CPU time around it.
func enqueueOption(ctx context.Context, opts Options, resName string, enqueue func(ctx context.Context, payload []byte) error,
	count func(context.Context) (int64, error), next func() int64) (*bench.Result, phaseCost, error) {
	before, err := redisconn.ReadCommandStats(ctx, opts.Client)
	if err != nil {
		return nil, phaseCost{}, err
	}
	cpu0, err := redisconn.ServerCPU(ctx, opts.Client)
	if err != nil {
		return nil, phaseCost{}, err
	}
	res := bench.Run(ctx, resName, bench.Config{Clients: opts.Clients, Ops: int64(opts.Jobs), Progress: opts.Progress},
		func(ctx context.Context, _ int, _ int64) error {
			payload, err := optionPayload(next())
			if err != nil {
				return err
			}
			return enqueue(ctx, payload)
		})
	cpu1, err := redisconn.ServerCPU(ctx, opts.Client)
	if err != nil {
		return res, phaseCost{}, err
	}
	after, err := redisconn.ReadCommandStats(ctx, opts.Client)
	if err != nil {
		return res, phaseCost{}, err
	}
	stats := phaseCost{commands: after.Sub(before), cpu: cpu1 - cpu0}
	progressf(opts.Progress, "  %s: server CPU %.2fµs/enqueue; %s\n", resName, CPUUsPerOp(stats.cpu, res.Ops), stats.commands)
	if res.Errors > 0 {
		return res, stats, fmt.Errorf("%d enqueues failed, first: %w", res.Errors, res.FirstErr)
	}
	if err := ctx.Err(); err != nil {
		return res, stats, err
	}
	n, err := count(ctx)
	if err != nil {
		return res, stats, err
	}
	if n != int64(opts.Jobs) {
		return res, stats, fmt.Errorf("after enqueuing %d jobs the queue holds %d", opts.Jobs, n)
	}
	return res, stats, nil
}

// optionRound runs our side of case c in round r.
func (o *ours) optionRound(ctx context.Context, c optionCase, r int) (*bench.Result, phaseCost, error) {
	q := optionQueue(o.queue, c.name, r)
	p, err := queue.NewProducer(o.broker, q)
	if err != nil {
		return nil, phaseCost{}, err
	}
	return enqueueOption(ctx, o.opts, c.name+"/ours",
		func(ctx context.Context, payload []byte) error { return c.ours(ctx, p, payload) },
		func(ctx context.Context) (int64, error) {
			st, err := o.broker.Stats(ctx, q)
			return c.oursCount(st), err
		}, func() int64 { return o.ids.Add(1) })
}

// optionRound runs asynq's side of case c in round r.
func (a *asynqBench) optionRound(ctx context.Context, c optionCase, r int) (*bench.Result, phaseCost, error) {
	q := optionQueue(a.queue, c.name, r)
	a.extraQueues = append(a.extraQueues, q)
	insp := asynq.NewInspectorFromRedisClient(a.opts.Client)
	return enqueueOption(ctx, a.opts, c.name+"/asynq",
		func(ctx context.Context, payload []byte) error { return c.asynq(ctx, a.client, q, payload) },
		func(context.Context) (int64, error) {
			qi, err := insp.GetQueueInfo(q)
			if err != nil {
				return 0, err
			}
			return int64(c.asynqCount(qi)), nil
		}, func() int64 { return a.ids.Add(1) })
}

// phaseCost is what one enqueue phase cost the server.
type phaseCost struct {
	commands redisconn.CommandStats
	cpu      time.Duration
}

// runOption runs case c for opts.Rounds rounds, alternating the order like Run.
func runOption(ctx context.Context, opts Options, o *ours, a *asynqBench, c optionCase, out *OptionEnqueue) error {
	type side struct {
		name  string
		run   func(context.Context, optionCase, int) (*bench.Result, phaseCost, error)
		res   *bench.Result
		stats redisconn.CommandStats
		cpu   *time.Duration
	}
	ourSide := &side{"ours", o.optionRound, out.Ours, out.OursRedis, &out.OursCPU}
	baseSide := &side{"asynq", a.optionRound, out.Baseline, out.BaselineRedis, &out.BaselineCPU}
	for r := range opts.Rounds {
		order := []*side{ourSide, baseSide}
		if r%2 == 1 {
			order = []*side{baseSide, ourSide}
		}
		for _, s := range order {
			progressf(opts.Progress, "%s round %d/%d: %s\n", c.name, r+1, opts.Rounds, s.name)
			res, stats, err := s.run(ctx, c, r)
			if res != nil {
				s.res.Merge(res)
			}
			*s.cpu += stats.cpu
			for name, st := range stats.commands {
				old := s.stats[name]
				s.stats[name] = redisconn.CommandStat{Calls: old.Calls + st.Calls, Usec: old.Usec + st.Usec}
			}
			if err != nil {
				return fmt.Errorf("%s %s, round %d: %w", c.name, s.name, r+1, err)
			}
		}
	}
	return nil
}

// newOptionEnqueue returns an empty OptionEnqueue named name.
func newOptionEnqueue(name, c string) *OptionEnqueue {
	return &OptionEnqueue{
		Comparison:    bench.Comparison{Name: name, Ours: &bench.Result{Name: c + "/ours"}, Baseline: &bench.Result{Name: c + "/asynq"}},
		OursRedis:     redisconn.CommandStats{},
		BaselineRedis: redisconn.CommandStats{},
	}
}
