package queuebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

// asynqTaskType is the baseline's task type name.
const asynqTaskType = "bench:noop"

// asynqAllQueues is asynq's set of known queue names (its base.AllQueues key).
const asynqAllQueues = "asynq:queues"

// asynqBench runs the baseline: asynq.Client to enqueue, asynq.Server to process, on the
// shared go-redis client (asynq neither closes nor reconfigures it).
type asynqBench struct {
	opts   Options
	queue  string
	client *asynq.Client
	ids    atomic.Int64
	// extraQueues are the queues of the enqueue-with-options cases, removed with the main one.
	extraQueues []string
}

func newAsynq(opts Options, queueName string) *asynqBench {
	return &asynqBench{opts: opts, queue: queueName, client: asynq.NewClientFromRedisClient(opts.Client)}
}

func (a *asynqBench) describe() string {
	return fmt.Sprintf("asynq queue %q; asynq.Server Concurrency %d, Queues {%q: 1}, default intervals (TaskCheckInterval 1s, DelayedTaskCheckInterval 5s), "+
		"tasks with default options (MaxRetry 25, Timeout 30m, no Unique/Retention/Deadline/Group)",
		a.queue, a.opts.Concurrency, a.queue)
}

// cleanup unlinks asynq's keys of the queue and of the option cases' queues
// (asynq:{<queue>}:...) and removes them from asynq:queues. The server's own keys (asynq:servers..., asynq:workers...) are removed by
// Server.Shutdown.
func (a *asynqBench) cleanup(ctx context.Context) (int64, error) {
	queues := append([]string{a.queue}, a.extraQueues...)
	var n int64
	for _, q := range queues {
		m, err := bench.UnlinkMatching(ctx, a.opts.Client, "asynq:{"+keyspace.GlobEscape(q)+"}:*")
		n += m
		if err != nil {
			return n, err
		}
	}
	members := make([]any, len(queues))
	for i, q := range queues {
		members[i] = q
	}
	m, err := a.opts.Client.SRem(ctx, asynqAllQueues, members...).Result()
	if err == nil {
		// asynq:queues itself goes when its last member does; count it as ours if it did.
		if left, lerr := a.opts.Client.Exists(ctx, asynqAllQueues).Result(); lerr == nil && left == 0 && m > 0 {
			n++
		}
	}
	return n, err
}

// round enqueues opts.Jobs tasks, then drains them, adding what the drain cost to cost.
func (a *asynqBench) round(ctx context.Context, _ int, cost *bench.SideCost) (enq, proc *bench.Result, err error) {
	enq = bench.Run(ctx, "enqueue/asynq", bench.Config{Clients: a.opts.Clients, Ops: int64(a.opts.Jobs), Progress: a.opts.Progress},
		func(ctx context.Context, _ int, _ int64) error {
			// The same job content as ours, as the task's payload.
			payload, err := queue.EncodeMessage(report.NewJob(a.ids.Add(1), time.Now(), nil))
			if err != nil {
				return err
			}
			_, err = a.client.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, payload), asynq.Queue(a.queue))
			return err
		})
	if enq.Errors > 0 {
		return enq, nil, fmt.Errorf("%d enqueues failed, first: %w", enq.Errors, enq.FirstErr)
	}
	if err := ctx.Err(); err != nil {
		return enq, nil, err
	}
	insp := asynq.NewInspectorFromRedisClient(a.opts.Client)
	qi, err := insp.GetQueueInfo(a.queue)
	if err != nil {
		return enq, nil, err
	}
	if qi.Pending != a.opts.Jobs {
		return enq, nil, fmt.Errorf("after enqueuing %d tasks asynq's queue holds %d pending", a.opts.Jobs, qi.Pending)
	}
	var one bench.SideCost
	if merr := one.Measure(ctx, a.opts.Client, func() { proc, err = a.process(ctx, insp) }); merr != nil && err == nil {
		err = merr
	}
	addCost(cost, one)
	progressf(a.opts.Progress, "  process/asynq: %s\n", costSummary(one, proc))
	return enq, proc, err
}

// process runs an asynq.Server until its handler has run opts.Jobs times and the queue is
// empty.
func (a *asynqBench) process(ctx context.Context, insp *asynq.Inspector) (*bench.Result, error) {
	d := newDrain(a.opts.Jobs)
	logOut := a.opts.Progress
	if logOut == nil {
		logOut = io.Discard
	}
	srv := asynq.NewServerFromRedisClient(a.opts.Client, asynq.Config{
		Concurrency: a.opts.Concurrency,
		Queues:      map[string]int{a.queue: 1},
		Logger:      asynqLogger{logOut},
		LogLevel:    asynq.WarnLevel,
	})
	err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		d.started()
		d.finished()
		return nil
	}))
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	if err := d.wait(ctx, "process/asynq", a.opts.Progress, a.opts.StallTimeout); err != nil {
		return nil, err
	}
	res := d.result("process/asynq")
	// The last tasks are marked done just after their handler returned: wait for that
	// (outside the measured time) and check that nothing is left.
	deadline := time.Now().Add(10 * time.Second)
	for {
		qi, err := insp.GetQueueInfo(a.queue)
		if err != nil {
			return res, err
		}
		if qi.Pending == 0 && qi.Active == 0 && qi.Retry == 0 && qi.Archived == 0 && qi.Scheduled == 0 {
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("asynq queue not drained after %d handler calls: pending %d, active %d, retry %d, archived %d",
				a.opts.Jobs, qi.Pending, qi.Active, qi.Retry, qi.Archived)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// asynqLogger writes asynq's log lines to w.
type asynqLogger struct{ w io.Writer }

func (l asynqLogger) log(level string, args []any) {
	fmt.Fprintf(l.w, "asynq %s: %s\n", level, fmt.Sprint(args...))
}

func (l asynqLogger) Debug(args ...any) { l.log("DEBUG", args) }
func (l asynqLogger) Info(args ...any)  { l.log("INFO", args) }
func (l asynqLogger) Warn(args ...any)  { l.log("WARN", args) }
func (l asynqLogger) Error(args ...any) { l.log("ERROR", args) }

// Fatal logs and exits like asynq's default logger.
func (l asynqLogger) Fatal(args ...any) { l.log("FATAL", args); os.Exit(1) }

func (a *asynqBench) name() string { return fmt.Sprintf("asynq (queue %q)", a.queue) }
