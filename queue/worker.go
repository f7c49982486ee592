package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/coalesce"
	"github.com/redstate/redstate/internal/ctxsleep"
)

// Handler processes one job. A nil return acks the job; an error retries it (or dead-letters it
// after the last retry). ctx is not canceled when the Worker begins a graceful shutdown, only
// WorkerSettings.ShutdownTimeout later. Handlers must be idempotent: delivery is at least once. A panic
// is recovered and treated as an error.
type Handler func(ctx context.Context, job *Delivery) error

// DeadHook is told about every job the Worker dead-letters, after the job is on the dead-letter
// list: m is the job as received and cause the handler's last error. Its ctx is bounded by
// WorkerSettings.BlockTimeout. An error it returns is logged; the job stays dead-lettered either way.
type DeadHook func(ctx context.Context, m Message, cause error) error

// Worker consumes one queue (NewWorker), or several with priorities between them (NewPool): a
// dispatcher fetches jobs with DequeueBatch (prefetch: up to Concurrency+Prefetch jobs held at
// once) and hands them, in order, to Concurrency handler goroutines, which run the queue's
// Handler and settle the job (Ack, Retry or Bury; acks of concurrently finishing jobs are
// coalesced into one AckBatch round trip and, with Concurrency > 1, leave in the background
// while the handler goroutine takes its next job: see consume). Per queue, a heartbeat goroutine renews the
// consumer's lease every Lease/3 (and stops running jobs whose cancel was requested); a promote
// goroutine moves due scheduled jobs and retries to pending every min(PromoteInterval,
// DuePromoteInterval); a maintenance goroutine recovers jobs of crashed consumers and gives
// back jobs stranded in this consumer's own in-flight list (releaseOrphans) every
// PromoteInterval. A job with a record (EnqueueJob) is started with Broker.StartJob before its
// handler runs, which refuses a cancelled job and gives a job back while the queue is paused;
// its handler gets the job's Timeout. Jobs prefetched but not started when Run's ctx ends are
// given back to the head of their pending list (Release). See docs/queue.md for the delivery
// guarantee and, for pools, "Priorities".
type Worker struct {
	b    Broker
	pool PoolSettings // defaults applied
	// lanes are the queues, heaviest weight first (a strict pool: highest priority first),
	// equal weights in the order given.
	lanes   []*lane
	byQueue map[string]*lane
	log     *slog.Logger
	// credit is the smooth weighted round robin's state of a weighted pool, one per lane
	// (assign; the dispatcher's goroutine only).
	credit []int
	// settleTimeout bounds one coalesced AckBatch: the longest BlockTimeout of the queues.
	settleTimeout time.Duration
	// errorDelay is the wait before registering again when no lease could be taken: the
	// shortest ErrorDelay of the queues.
	errorDelay time.Duration
}

// NewWorker returns a Worker of cfg.Queue for cfg (defaults applied). Errors: EINVALID (bad
// config, no queue, nil broker or handler).
func NewWorker(b Broker, h Handler, cfg WorkerSettings) (*Worker, error) {
	if b == nil || h == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "queue worker: broker and handler are required")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pool := PoolSettings{ConsumerID: cfg.ConsumerID, Concurrency: cfg.Concurrency, Prefetch: cfg.Prefetch, NoPrefetch: cfg.Prefetch == 0,
		BlockTimeout: cfg.BlockTimeout, ShutdownTimeout: cfg.ShutdownTimeout, Logger: cfg.Logger}
	l := newLane(b, h, cfg, 1)
	return newWorker(b, pool, []*lane{l}, l.log), nil
}

// newWorker returns the Worker of lanes (sorted, at least one) under pool (defaults applied),
// logging to log.
func newWorker(b Broker, pool PoolSettings, lanes []*lane, log *slog.Logger) *Worker {
	w := &Worker{b: b, pool: pool, lanes: lanes, byQueue: make(map[string]*lane, len(lanes)), log: log, credit: make([]int, len(lanes)),
		errorDelay: lanes[0].cfg.ErrorDelay}
	for _, l := range lanes {
		w.byQueue[l.cfg.Queue] = l
		w.settleTimeout = max(w.settleTimeout, l.cfg.BlockTimeout)
		w.errorDelay = min(w.errorDelay, l.cfg.ErrorDelay)
	}
	return w
}

// ConsumerID returns the worker's consumer id (the same on each of a pool's queues).
func (w *Worker) ConsumerID() string { return w.pool.ConsumerID }

// Settings returns the effective settings of the worker's queue (defaults applied); of a pool,
// those of its first queue (QueueSettings has them all).
func (w *Worker) Settings() WorkerSettings { return w.lanes[0].cfg }

// QueueSettings returns the effective settings of each queue the worker serves, in its order
// (a pool: heaviest weight, or highest priority, first), with their weights.
func (w *Worker) QueueSettings() []PoolQueueSettings {
	out := make([]PoolQueueSettings, len(w.lanes))
	for i, l := range w.lanes {
		out[i] = PoolQueueSettings{Settings: l.cfg, Weight: l.weight}
	}
	return out
}

// Pool returns the worker's pool-wide settings (defaults applied); a Worker of one queue
// (NewWorker) has them from its WorkerSettings.
func (w *Worker) Pool() PoolSettings { return w.pool }

// Run consumes until ctx is canceled, then shuts down gracefully: it stops dequeuing, gives
// prefetched jobs that no handler started back to the head of the pending list (in order), lets
// the running handlers finish (canceling their ctx only after ShutdownTimeout), settles their
// jobs, keeps heartbeating until then, and returns nil. Broker errors never end Run: each is
// logged, and the failing loop resumes after ErrorDelay (in a pool, the other queues are
// served meanwhile).
func (w *Worker) Run(ctx context.Context) error {
	// Handlers and settlement outlive ctx by up to ShutdownTimeout.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	stopTimer := context.AfterFunc(ctx, func() {
		w.log.Info("queue worker shutting down; waiting for running jobs", "timeout", w.pool.ShutdownTimeout)
		time.AfterFunc(w.pool.ShutdownTimeout, hcancel)
	})
	defer stopTimer()

	// Register the leases before the first Dequeue (the broker requires them).
	for _, l := range w.lanes {
		defer l.lease.stop()
	}
	for !w.register(ctx) {
		if !ctxsleep.Sleep(ctx, w.errorDelay) {
			return nil
		}
	}

	hbctx, hbcancel := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	for _, l := range w.lanes {
		l.runLoops(ctx, hbctx, &bg)
	}

	ack := func(c context.Context, d *Delivery) error { return w.b.Ack(c, d) }
	if w.pool.Concurrency > 1 {
		// Group commit: acks of concurrently finishing jobs leave in one AckBatch. Each caller
		// gets its own outcome, after the broker answered.
		acks := coalesce.New(coalesce.Options{Workers: ackRounds, MaxBatch: w.pool.Concurrency + w.pool.Prefetch},
			func(c context.Context, ds []*Delivery) []coalesce.Outcome[struct{}] {
				c, cancel := context.WithTimeout(c, w.settleTimeout)
				defer cancel()
				errs := w.b.AckBatch(c, ds)
				out := make([]coalesce.Outcome[struct{}], len(ds))
				for i := range out {
					if i < len(errs) {
						out[i].Err = errs[i]
					} else {
						out[i].Err = redstate.Errorf(redstate.EINTERNAL, "queue: AckBatch returned %d results for %d acks", len(errs), len(ds))
					}
				}
				return out
			})
		defer acks.Close()
		ack = func(c context.Context, d *Delivery) error {
			_, err := acks.Do(c, d)
			if errors.Is(err, coalesce.ErrClosed) {
				return w.b.Ack(c, d)
			}
			return err
		}
	}

	w.consume(ctx, hctx, ack)
	hbcancel() // running jobs are settled and prefetched ones released: the leases may lapse now
	bg.Wait()
	w.log.Info("queue worker stopped")
	return nil
}

// register takes the consumer's lease on every queue, and tells whether it holds at least one
// (a queue whose heartbeat failed is renewed by its heartbeat loop, or by the dispatcher when
// its dequeue finds no lease).
func (w *Worker) register(ctx context.Context) bool {
	held := false
	for _, l := range w.lanes {
		err := l.heartbeat(ctx)
		switch {
		case err == nil:
			l.outage.OK(ctx)
			held = true
		case ctx.Err() == nil:
			l.outage.Failed(ctx, "queue heartbeat failed", err)
		}
	}
	return held
}

// ackRounds is how many coalesced AckBatch round trips may be in flight at once.
const ackRounds = 2

// ackFunc acks one delivery.
type ackFunc func(context.Context, *Delivery) error

// prefetched is the FIFO of jobs the dispatcher fetched and no handler has started yet. A
// handler takes a token from avail, then pops under mu unless the FIFO was stopped; stop takes
// every remaining job under mu, so after it no handler can start one: the remaining jobs are
// exactly the unstarted ones, in dispatch order.
type prefetched struct {
	avail chan struct{} // one token per pushed job
	mu    sync.Mutex
	jobs  []*Delivery
	stop  bool
}

func (p *prefetched) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.jobs)
}

// push appends ds and hands out one token each (never blocks: avail holds capacity tokens).
func (p *prefetched) push(ds []*Delivery) {
	p.mu.Lock()
	p.jobs = append(p.jobs, ds...)
	p.mu.Unlock()
	for range ds {
		p.avail <- struct{}{}
	}
}

// pop takes the oldest job, or nil once stopped or when ctx has ended.
func (p *prefetched) pop(ctx context.Context) *Delivery {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop || ctx.Err() != nil || len(p.jobs) == 0 {
		return nil
	}
	d := p.jobs[0]
	p.jobs[0] = nil
	p.jobs = p.jobs[1:]
	return d
}

// stopAll stops the FIFO and returns the jobs left in it, oldest first.
func (p *prefetched) stopAll() []*Delivery {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop = true
	rest := p.jobs
	p.jobs = nil
	return rest
}

// consume runs the dispatcher (in the calling goroutine) and the handler goroutines until ctx
// ends, then releases the prefetched jobs no handler started and returns once every started job
// is settled.
//
// The dispatcher holds at most Concurrency+Prefetch jobs (running or waiting). It asks its
// queues for as many as are free whenever at most Prefetch/2 are waiting (fill), so with jobs
// pending the handlers find the next job already fetched, and one script call serves several
// jobs.
//
// A handler goroutine of a worker with Concurrency > 1 does not wait for its job's ack: the ack
// is settled on a goroutine of its own (coalesced with the acks finishing meanwhile, each
// reported once the broker answered) while the handler takes the next job, so that no handler
// idles for a round trip per job and acks leave in larger batches. Such a job no longer counts
// among the held ones, but it stays in flight (and held for the in-flight audit) until its ack
// is answered; while Concurrency+Prefetch acks are unanswered, the dispatcher fetches nothing.
// A serial worker (Concurrency 1) acks each job before it takes the next.
func (w *Worker) consume(ctx, hctx context.Context, ack ackFunc) {
	capacity := w.pool.Concurrency + w.pool.Prefetch
	q := &prefetched{avail: make(chan struct{}, capacity)} // len(avail) <= len(jobs) <= held <= capacity
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var held atomic.Int64   // dequeued and neither handled nor settled (running or waiting)
	var acking atomic.Int64 // handled, their acks not yet answered
	var acks sync.WaitGroup // the goroutines of those acks
	// A serial worker (Concurrency 1) acks a job before it starts the next, so that its jobs
	// finish one after the other also in the broker.
	serial := w.pool.Concurrency == 1

	var handlers sync.WaitGroup
	for range w.pool.Concurrency {
		handlers.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-q.avail:
				}
				d := q.pop(ctx)
				if d == nil {
					return // shutting down: the job stays for release
				}
				signal()
				l := w.byQueue[d.Queue]
				settle := l.handle(hctx, d)
				if settle != nil && serial {
					settle(ack)
					settle = nil
				}
				if settle != nil {
					// The ack leaves in the background (coalesced with the others finishing
					// now) and the handler takes the next job: the job stays in flight and
					// held by the in-flight audit until its ack is answered.
					acking.Add(1)
					acks.Go(func() {
						settle(ack)
						l.holding.remove(d)
						acking.Add(-1)
						signal()
					})
				} else {
					l.holding.remove(d)
				}
				held.Add(-1)
				signal()
			}
		})
	}

	take := func(l *lane, ds []*Delivery) {
		l.holding.add(ds)
		held.Add(int64(len(ds)))
		q.push(ds)
	}
	for ctx.Err() == nil {
		free := int64(capacity) - held.Load()
		if free < 1 || q.len() > w.pool.Prefetch/2 || acking.Load() >= int64(capacity) {
			select {
			case <-wake:
			case <-ctx.Done():
			}
			continue
		}
		if retry := w.fill(ctx, int(free), take); retry > 0 {
			ctxsleep.Sleep(ctx, retry)
		}
	}

	// Shutdown: what no handler started goes back now, while the running jobs finish.
	rest := q.stopAll()
	for _, l := range w.lanes {
		var mine []*Delivery
		for _, d := range rest {
			if d.Queue == l.cfg.Queue {
				mine = append(mine, d)
			}
		}
		l.release(hctx, mine)
	}
	handlers.Wait()
	acks.Wait()
}

// Process handles one delivery exactly as Run does: it dead-letters a malformed message
// (MalformedDeadLetter), runs the handler of the delivery's queue, and acks, retries or
// dead-letters the job (calling WorkerSettings.OnDead in the last case). It is exported for
// callers that drive their own Dequeue loop, and for tests; it uses no lease or maintenance
// goroutine. It returns when the job is settled or ctx ends. A delivery of a queue the worker
// does not serve is logged and left in flight.
func (w *Worker) Process(ctx context.Context, d *Delivery) {
	l := w.byQueue[d.Queue]
	if l == nil {
		w.log.Error("queue worker given a job of a queue it does not serve; left in flight", "job_queue", d.Queue)
		return
	}
	if ack := l.handle(ctx, d); ack != nil {
		ack(func(c context.Context, d *Delivery) error { return w.b.Ack(c, d) })
	}
}
