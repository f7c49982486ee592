package queuebench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/report"
)

// ours runs our queue: redisqueue.Broker under a unique namespace, drained by queue.Workers.
type ours struct {
	opts   Options
	ns     string
	queue  string
	broker *redisqueue.Broker
	ids    atomic.Int64 // record ids of the jobs (seed-format report jobs), unique across rounds
}

func newOurs(opts Options, namespace, queueName string) (*ours, error) {
	b, err := redisqueue.New(opts.Client, redisqueue.Options{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	return &ours{opts: opts, ns: namespace, queue: queueName, broker: b}, nil
}

func (o *ours) describe() string {
	return fmt.Sprintf("redisqueue namespace %q queue %q; %d queue.Worker(s), Concurrency %d in total, BlockTimeout %s, PromoteInterval %s, Lease %s",
		o.ns, o.queue, o.opts.Workers, o.opts.Concurrency, o.opts.BlockTimeout, o.opts.PromoteInterval, queue.DefaultLease)
}

// cleanup unlinks every key under the namespace.
func (o *ours) cleanup(ctx context.Context) (int64, error) {
	return bench.UnlinkPrefix(ctx, o.opts.Client, o.ns)
}

// round enqueues opts.Jobs jobs, then drains them, adding what the drain cost to cost.
func (o *ours) round(ctx context.Context, r int, cost *bench.SideCost) (enq, proc *bench.Result, err error) {
	enq = bench.Run(ctx, "enqueue/ours", bench.Config{Clients: o.opts.Clients, Ops: int64(o.opts.Jobs), Progress: o.opts.Progress},
		func(ctx context.Context, _ int, _ int64) error {
			return o.broker.Enqueue(ctx, o.queue, report.NewJob(o.ids.Add(1), time.Now(), nil))
		})
	if enq.Errors > 0 {
		return enq, nil, fmt.Errorf("%d enqueues failed, first: %w", enq.Errors, enq.FirstErr)
	}
	if err := ctx.Err(); err != nil {
		return enq, nil, err
	}
	st, err := o.broker.Stats(ctx, o.queue)
	if err != nil {
		return enq, nil, err
	}
	if st.Pending != int64(o.opts.Jobs) {
		return enq, nil, fmt.Errorf("after enqueuing %d jobs the queue holds %d pending", o.opts.Jobs, st.Pending)
	}
	var one bench.SideCost
	if merr := one.Measure(ctx, o.opts.Client, func() { proc, err = o.process(ctx, r) }); merr != nil && err == nil {
		err = merr
	}
	addCost(cost, one)
	progressf(o.opts.Progress, "  process/ours: %s\n", costSummary(one, proc))
	return enq, proc, err
}

// observerFunc adapts a function to queue.Observer.
type observerFunc func(queue, outcome string, d time.Duration)

func (f observerFunc) ObserveJob(q, outcome string, d time.Duration) { f(q, outcome, d) }

// process runs the Workers until every job is acked and the queue is empty.
func (o *ours) process(ctx context.Context, r int) (*bench.Result, error) {
	d := newDrain(o.opts.Jobs)
	handler := func(context.Context, *queue.Delivery) error {
		d.started()
		return nil
	}
	obs := observerFunc(func(_, outcome string, _ time.Duration) {
		if outcome == queue.OutcomeAcked {
			d.finished()
		} else {
			d.failed.Add(1)
		}
	})
	logOut := o.opts.Progress
	if logOut == nil {
		logOut = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn}))

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	for i := range o.opts.Workers {
		conc := o.opts.Concurrency / o.opts.Workers
		if i < o.opts.Concurrency%o.opts.Workers {
			conc++
		}
		w, err := queue.NewWorker(o.broker, handler, queue.WorkerSettings{
			Queue:           o.queue,
			ConsumerID:      fmt.Sprintf("%s-r%d-w%d", o.queue, r, i),
			Concurrency:     conc,
			BlockTimeout:    o.opts.BlockTimeout,
			PromoteInterval: o.opts.PromoteInterval,
			ShutdownTimeout: 10 * time.Second,
			Logger:          logger,
			Observer:        obs,
		})
		if err != nil {
			return nil, err
		}
		wg.Go(func() { _ = w.Run(wctx) })
	}
	if err := d.wait(ctx, "process/ours", o.opts.Progress, o.opts.StallTimeout); err != nil {
		return nil, err
	}
	res := d.result("process/ours")
	st, err := o.broker.Stats(ctx, o.queue)
	if err != nil {
		return res, err
	}
	if st.Pending != 0 || st.Running != 0 || st.Retrying != 0 || st.Dead != 0 {
		return res, fmt.Errorf("queue not drained after %d acks: %+v", o.opts.Jobs, st)
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("%d deliveries were not acked", res.Errors)
	}
	return res, nil
}

func (o *ours) name() string { return fmt.Sprintf("ours (namespace %q)", o.ns) }
