package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/coalesce"
	"github.com/redstate/redstate/internal/outagelog"
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

// Worker consumes one queue: a dispatcher fetches jobs with DequeueBatch (prefetch: up to
// Concurrency+Prefetch jobs held at once) and hands them, in order, to Concurrency handler
// goroutines, which run the Handler and settle the job (Ack, Retry or Bury; acks of
// concurrently finishing jobs are coalesced into one AckBatch round trip); a heartbeat
// goroutine renews the consumer's lease every Lease/3 (and stops running jobs whose cancel was
// requested); a promote goroutine moves due scheduled jobs and retries to pending every
// min(PromoteInterval, DuePromoteInterval); a maintenance goroutine recovers jobs of crashed
// consumers and gives back jobs stranded in this consumer's own in-flight list
// (releaseOrphans) every PromoteInterval. A job with a record (EnqueueJob) is started with
// Broker.StartJob before its handler runs, which refuses a cancelled job and gives a job back
// while the queue is paused; its handler gets the job's Timeout. Jobs prefetched but not
// started when Run's ctx ends are given back to the head of the pending list (Release). See
// docs/queue.md for the delivery guarantee.
type Worker struct {
	b      Broker
	h      Handler
	cfg    WorkerSettings
	log    *slog.Logger
	outage *outagelog.Log // one log line per backend state change
	// holding is what the worker holds, for the in-flight audit (releaseOrphans).
	holding *holding
	// running are the running handlers, for cancel requests and lease lapses.
	running *runningJobs
	// lease stops the running handlers before the consumer's lease can expire while heartbeats
	// fail (armed by Run's heartbeats; Process alone never lapses).
	lease *leaseWatch
}

// NewWorker returns a Worker for cfg (defaults applied). Errors: EINVALID (bad config, no
// queue, nil broker or handler).
func NewWorker(b Broker, h Handler, cfg WorkerSettings) (*Worker, error) {
	if b == nil || h == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "queue worker: broker and handler are required")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("queue", cfg.Queue, "consumer", cfg.ConsumerID)
	running := newRunningJobs()
	return &Worker{b: b, h: h, cfg: cfg, log: log, outage: outagelog.New(log, "queue backend"), holding: newHolding(), running: running,
		lease: newLeaseWatch(cfg.Lease, max(cfg.Lease/3, time.Millisecond), running)}, nil
}

// ConsumerID returns the worker's consumer id.
func (w *Worker) ConsumerID() string { return w.cfg.ConsumerID }

// Settings returns the worker's effective configuration (defaults applied).
func (w *Worker) Settings() WorkerSettings { return w.cfg }

// Run consumes until ctx is canceled, then shuts down gracefully: it stops dequeuing, gives
// prefetched jobs that no handler started back to the head of the pending list (in order), lets
// the running handlers finish (canceling their ctx only after ShutdownTimeout), settles their
// jobs, keeps heartbeating until then, and returns nil. Broker errors never end Run: each is
// logged, and the failing loop resumes after ErrorDelay.
func (w *Worker) Run(ctx context.Context) error {
	// Handlers and settlement outlive ctx by up to ShutdownTimeout.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	stopTimer := context.AfterFunc(ctx, func() {
		w.log.Info("queue worker shutting down; waiting for running jobs", "timeout", w.cfg.ShutdownTimeout)
		time.AfterFunc(w.cfg.ShutdownTimeout, hcancel)
	})
	defer stopTimer()

	// Register the lease before the first Dequeue (the broker requires it).
	defer w.lease.stop()
	for {
		err := w.heartbeat(ctx)
		if err == nil {
			w.outage.OK(ctx)
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		w.outage.Failed(ctx, "queue heartbeat failed", err)
		if !sleep(ctx, w.cfg.ErrorDelay) {
			return nil
		}
	}

	hbctx, hbcancel := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	bg.Go(func() { w.heartbeatLoop(hbctx) })
	bg.Go(func() { w.maintenanceLoop(ctx) })
	bg.Go(func() { w.promoteLoop(ctx) })

	ack := func(c context.Context, d *Delivery) error { return w.b.Ack(c, d) }
	if w.cfg.Concurrency > 1 {
		// Group commit: acks of concurrently finishing jobs leave in one AckBatch. Each caller
		// gets its own outcome, after the broker answered.
		acks := coalesce.New(coalesce.Options{Workers: ackRounds, MaxBatch: w.cfg.Concurrency},
			func(c context.Context, ds []*Delivery) []coalesce.Outcome[struct{}] {
				c, cancel := context.WithTimeout(c, w.cfg.BlockTimeout)
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
	hbcancel() // running jobs are settled and prefetched ones released: the lease may lapse now
	bg.Wait()
	w.log.Info("queue worker stopped")
	return nil
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
// The dispatcher holds at most Concurrency+Prefetch jobs (running or waiting). It asks
// DequeueBatch for as many as are free whenever at most Prefetch/2 are waiting, so with jobs
// pending the handlers find the next job already fetched, and one script call serves several
// jobs.
func (w *Worker) consume(ctx, hctx context.Context, ack ackFunc) {
	capacity := w.cfg.Concurrency + w.cfg.Prefetch
	q := &prefetched{avail: make(chan struct{}, capacity)} // len(avail) <= len(jobs) <= held <= capacity
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var held atomic.Int64 // dequeued and not yet settled (running or waiting)

	var handlers sync.WaitGroup
	for range w.cfg.Concurrency {
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
				w.handle(hctx, d, ack)
				w.holding.remove(d)
				held.Add(-1)
				signal()
			}
		})
	}

	for ctx.Err() == nil {
		free := int64(capacity) - held.Load()
		if free < 1 || q.len() > w.cfg.Prefetch/2 {
			select {
			case <-wake:
			case <-ctx.Done():
			}
			continue
		}
		ds, err := w.b.DequeueBatch(ctx, w.cfg.Queue, w.cfg.ConsumerID, int(free), w.cfg.BlockTimeout)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if redstate.IsCode(err, redstate.ECONFLICT) {
				// Our lease lapsed (e.g. heartbeats failed); renew it and go on.
				w.log.Warn("queue lease lost; renewing", "err", err)
				if herr := w.heartbeat(ctx); herr == nil {
					continue
				}
			}
			w.outage.Failed(ctx, "queue dequeue failed", err)
			sleep(ctx, w.cfg.ErrorDelay)
			continue
		}
		w.outage.OK(ctx)
		w.holding.add(ds)
		held.Add(int64(len(ds)))
		q.push(ds)
	}

	// Shutdown: what no handler started goes back now, while the running jobs finish.
	w.release(hctx, q.stopAll())
	handlers.Wait()
}

// release gives prefetched jobs that no handler started back to the head of the pending list,
// in order, retrying every ErrorDelay until it succeeds or ctx ends (then they stay in flight
// and are recovered once the lease lapses).
func (w *Worker) release(ctx context.Context, ds []*Delivery) {
	if len(ds) == 0 {
		return
	}
	var n int
	if !w.settle(ctx, "release", func(c context.Context) (err error) {
		n, err = w.b.Release(c, ds)
		return err
	}) {
		return
	}
	if n < len(ds) {
		w.log.Warn("queue released prefetched jobs; some were no longer in flight (recovered after a lease expiry)", "released", n, "prefetched", len(ds))
		return
	}
	w.log.Info("queue released prefetched jobs to the head of the queue", "jobs", n)
}

// Process handles one delivery exactly as Run does: it dead-letters a malformed message
// (MalformedDeadLetter), runs the handler, and acks, retries or dead-letters the job (calling WorkerSettings.OnDead in the last case). It is exported for callers that drive their own Dequeue loop, and for tests; it uses
// no lease or maintenance goroutine. It returns when the job is settled or ctx ends.
func (w *Worker) Process(ctx context.Context, d *Delivery) {
	w.handle(ctx, d, func(c context.Context, d *Delivery) error { return w.b.Ack(c, d) })
}

// handle runs the handler on d and settles the job, acking with ack.
func (w *Worker) handle(ctx context.Context, d *Delivery, ack ackFunc) {
	log := w.log.With("raw", d.Raw)
	decodeErr := d.DecodeErr
	if decodeErr == nil && w.cfg.Check != nil {
		decodeErr = w.cfg.Check(d.Message)
	}
	if decodeErr != nil {
		// Not one of the queue's jobs: dead-lettered with the reason (never dropped), so an
		// operator sees it and may requeue it; no handler and no OnDead hook runs.
		log.Error("queue message malformed; dead-lettering it", "err", decodeErr)
		dead := MalformedDeadLetter(d, decodeErr, w.cfg.Now())
		if w.settle(ctx, "bury", func(c context.Context) error { return w.b.Bury(c, d, dead) }) {
			w.observe(OutcomeMalformed, 0)
		}
		return
	}
	m := d.Message
	log = w.log.With("retryCount", m.RetryCount, "jobId", m.JobID)
	if m.Job != nil && HasRecord(d.Raw) && !w.startJob(ctx, d, log) {
		return
	}
	hctx, box, done := w.handlerContext(ctx, m)
	start := time.Now()
	err := w.call(hctx, d)
	dur := time.Since(start)
	cancelled, lapsed := done()
	if lapsed && err != nil {
		// The lease may have expired and the job may already run at another consumer: settling
		// this interrupted run (a retry, a dead letter) would be wrong. It stays in flight and
		// is delivered again (RecoverExpired, or this worker's in-flight audit).
		log.Warn("queue lease lapsed while the job ran (no heartbeat succeeded for the lease minus one heartbeat period); its handler was stopped and the job will be delivered again",
			"duration", dur, "err", err)
		w.observe(OutcomeLost, dur)
		return
	}
	maxRetries, delay := m.Job.retryPolicy(w.cfg.MaxRetries, w.cfg.retryDelay, m.RetryCount)

	switch {
	case cancelled:
		d.Cancelled = true
		if w.settle(ctx, "ack", func(c context.Context) error { return ack(c, d) }) {
			log.Info("queue job cancelled while running", "duration", dur, "err", err)
			w.observe(OutcomeCancelled, dur)
		}
	case err == nil:
		d.Result = box.get()
		if w.settle(ctx, "ack", func(c context.Context) error { return ack(c, d) }) {
			log.Info("queue job done", "duration", dur)
			w.observe(OutcomeAcked, dur)
			w.observeLatency(m, dur)
		}
	case m.RetryCount < maxRetries && !IsPermanent(err):
		next := m.NextRetry()
		if m.Job != nil {
			next.LastError = truncateReason(err.Error()) // the record's attempt keeps it
		}
		due := w.cfg.Now().Add(delay)
		if w.settle(ctx, "retry", func(c context.Context) error { return w.b.Retry(c, d, next, due) }) {
			log.Warn("queue job failed; retry scheduled", "err", err, "delay", delay, "due", due)
			w.observe(OutcomeRetried, dur)
		}
	default:
		dead := m
		dead.LastError = truncateReason(err.Error())
		dead.FailedAt = w.cfg.Now().UTC().Truncate(time.Second)
		if !w.settle(ctx, "bury", func(c context.Context) error { return w.b.Bury(c, d, dead) }) {
			return
		}
		if IsPermanent(err) {
			log.Error("queue job failed permanently; dead-lettered without retrying", "err", err)
		} else {
			log.Error("queue job failed after last retry; dead-lettered", "err", err)
		}
		w.observe(OutcomeDead, dur)
		if w.cfg.OnDead != nil {
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.BlockTimeout)
			defer cancel()
			if herr := w.cfg.OnDead(hctx, m, err); herr != nil {
				// The job stays dead-lettered.
				log.Error("queue dead-letter hook failed", "err", herr)
			}
		}
	}
}

// startJob takes a job with a record from pending to active (Broker.StartJob), retrying on
// broker errors like settle. It returns false when the handler must not run: the job was
// cancelled (it is dropped from the in-flight list), the queue is paused (it is back at the head
// of pending), it is no longer in flight, or ctx ended.
func (w *Worker) startJob(ctx context.Context, d *Delivery, log *slog.Logger) bool {
	var verdict JobStart
	if !w.settle(ctx, "start", func(c context.Context) (err error) {
		verdict, err = w.b.StartJob(c, d)
		return err
	}) {
		return false
	}
	switch verdict {
	case JobCancelled:
		log.Info("queue job cancelled before it started; not running it")
		w.observe(OutcomeCancelled, 0)
		return false
	case JobPaused:
		log.Info("queue paused; job put back at the head of the queue")
		return false
	}
	return true
}

// errJobCancelled is the cause of a running job's ctx when CancelJob asked it to stop.
var errJobCancelled = redstate.Errorf(redstate.ECONFLICT, "queue job cancelled")

// handlerContext returns the ctx of m's handler, registered among the running jobs (a cancel
// request or a lease lapse stops it), with a result box (SetResult) and, for a job with a
// record, its Timeout. done releases them and tells whether the job was cancelled (CancelJob)
// or stopped by a lease lapse.
func (w *Worker) handlerContext(ctx context.Context, m Message) (context.Context, *resultBox, func() (cancelled, lapsed bool)) {
	id := ""
	if m.Job != nil {
		id = m.JobID
	}
	hctx, end := w.running.start(ctx, id)
	stopTimeout := func() {}
	if t := m.Job.Timeout(); t > 0 {
		hctx, stopTimeout = context.WithTimeout(hctx, t)
	}
	hctx, box := withResultBox(hctx)
	return hctx, box, func() (bool, bool) {
		cause := context.Cause(hctx)
		stopTimeout()
		end()
		return errors.Is(cause, errJobCancelled), errors.Is(cause, errLeaseLapsed)
	}
}

// maxReasonBytes bounds the failure reason kept in a dead letter.
const maxReasonBytes = 2048

// truncateReason bounds a failure reason kept in a dead letter, at a UTF-8 boundary.
func truncateReason(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	cut := maxReasonBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// call runs the handler, turning a panic into an error.
func (w *Worker) call(ctx context.Context, d *Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("queue handler panic: %v", r)
		}
	}()
	return w.h(ctx, d)
}

// settle runs op (Ack, Retry or Bury) until it succeeds and returns true. It gives up, returning
// false, on ECONFLICT (the job was recovered after a lease expiry and will be redelivered) or
// when ctx ends (the job stays in-flight and is recovered once this consumer's lease lapses).
// Other errors are logged and retried after ErrorDelay.
//
// An attempt that failed without an answer (a timeout, a lost connection) may have been applied
// by the broker all the same, so ECONFLICT after such an attempt most likely means that the
// earlier attempt took effect: settle then returns true. If instead the job was recovered
// meanwhile, it runs again (at least once) and is counted once more.
func (w *Worker) settle(ctx context.Context, what string, op func(context.Context) error) bool {
	unanswered := false
	for {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.BlockTimeout)
		err := op(actx)
		cancel()
		switch {
		case err == nil:
			return true
		case redstate.IsCode(err, redstate.ECONFLICT) && unanswered:
			w.log.Info("queue "+what+" retried after an unanswered attempt found the job settled: that attempt took effect", "err", err)
			return true
		case redstate.IsCode(err, redstate.ECONFLICT):
			w.log.Warn("queue "+what+" found the job no longer in flight; it will be redelivered", "err", err)
			w.observe(OutcomeLost, 0)
			return false
		}
		unanswered = true
		w.log.Error("queue "+what+" failed; retrying after delay", "err", err, "delay", w.cfg.ErrorDelay)
		if !sleep(ctx, w.cfg.ErrorDelay) {
			return false
		}
	}
}

// heartbeat renews the consumer's lease and, when it succeeded, re-arms the lease watch from the
// time the renewal was sent.
func (w *Worker) heartbeat(ctx context.Context) error {
	sent := time.Now()
	err := w.b.Heartbeat(ctx, w.cfg.Queue, w.cfg.ConsumerID, w.cfg.Lease)
	if err == nil {
		w.lease.renewed(sent)
	}
	return err
}

// heartbeatLoop renews the lease every Lease/3 until ctx ends.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(max(w.cfg.Lease/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := w.heartbeat(ctx); err != nil && ctx.Err() == nil {
			w.outage.Failed(ctx, "queue heartbeat failed", err)
		} else if err == nil {
			w.outage.OK(ctx)
			w.cancelRequested(ctx)
		}
	}
}

// cancelRequested cancels the ctx of every running job with a record whose cancel CancelJob
// requested. It asks the broker only while such jobs run.
func (w *Worker) cancelRequested(ctx context.Context) {
	ids := w.running.ids()
	if len(ids) == 0 {
		return
	}
	asked, err := w.b.CancelRequested(ctx, w.cfg.Queue, ids)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("queue cancel requests could not be read; asking again at the next heartbeat", "err", err)
		}
		return
	}
	for _, id := range asked {
		w.log.Info("queue job cancel requested; stopping its handler", "jobId", id)
		w.running.cancel(id)
	}
}

// promoteBatch is how many due retries one PromoteDue call moves.
const promoteBatch = 100

// maintenanceLoop recovers expired leases and releases this consumer's stranded jobs every
// PromoteInterval until ctx ends (promoteLoop promotes due jobs).
func (w *Worker) maintenanceLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.PromoteInterval)
	defer t.Stop()
	suspects := map[string]time.Time{}
	for {
		w.maintain(ctx)
		w.releaseOrphans(ctx, suspects)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DuePromoteInterval is the longest wait of the worker's promote loop between two PromoteDue
// calls (WorkerSettings.PromoteInterval when shorter): a scheduled job or a due retry reaches
// the pending list within about this long of its time.
const DuePromoteInterval = 50 * time.Millisecond

// promoteLoop moves due scheduled jobs and retries to the pending list every
// min(PromoteInterval, DuePromoteInterval) until ctx ends.
func (w *Worker) promoteLoop(ctx context.Context) {
	t := time.NewTicker(min(w.cfg.PromoteInterval, DuePromoteInterval))
	defer t.Stop()
	for {
		w.promote(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// promote moves every due scheduled job and retry to the pending list, promoteBatch at a time.
func (w *Worker) promote(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := w.b.PromoteDue(ctx, w.cfg.Queue, w.cfg.Now(), promoteBatch)
		if err != nil {
			if ctx.Err() == nil {
				w.outage.Failed(ctx, "queue promote due retries failed", err)
			}
			break
		}
		if n < promoteBatch {
			break
		}
	}
}

// maintain runs one maintenance round: it recovers the jobs of consumers whose lease expired.
func (w *Worker) maintain(ctx context.Context) {
	n, err := w.b.RecoverExpired(ctx, w.cfg.Queue)
	switch {
	case err != nil && ctx.Err() == nil:
		w.outage.Failed(ctx, "queue recover expired leases failed", err)
	case n > 0:
		w.log.Warn("queue recovered jobs of consumers whose lease expired", "jobs", n)
	}
}

// observe passes an outcome to the Observer, if any.
func (w *Worker) observe(outcome string, d time.Duration) {
	if w.cfg.Observer != nil {
		w.cfg.Observer.ObserveJob(w.cfg.Queue, outcome, d)
	}
}

// observeLatency tells a LatencyObserver the latency of job m, done after running for ran.
func (w *Worker) observeLatency(m Message, ran time.Duration) {
	lo, ok := w.cfg.Observer.(LatencyObserver)
	if !ok {
		return
	}
	latency := ran
	if !m.EnqueueTime.IsZero() {
		latency = max(ran, w.cfg.Now().Sub(m.EnqueueTime))
	}
	lo.ObserveLatency(w.cfg.Queue, latency)
}

// sleep waits d or until ctx ends; it tells whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
