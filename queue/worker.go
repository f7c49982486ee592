package queue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redstate/redstate"
)

// Handler processes one job. A nil return acks the job; an error retries it (or dead-letters it
// after the last retry). ctx is not canceled when the Worker begins a graceful shutdown, only
// Config.ShutdownTimeout later. Setting the record's final status on success (4, 已完成) is the
// handler's business (the report generator does it, e.g. with RecordStore.SetResult); the
// Worker sets status 5 only when it dead-letters a job. Handlers must be idempotent: delivery
// is at least once. A panic is recovered and treated as an error.
type Handler func(ctx context.Context, job *Delivery) error

// Worker consumes one queue: Concurrency goroutines each block in Dequeue, run the Handler and
// settle the job (Ack, Retry or Bury); a heartbeat goroutine renews the consumer's lease every
// Lease/3; a maintenance goroutine promotes due retries and recovers jobs of crashed consumers
// every PromoteInterval. See docs/queue.md for the delivery guarantee.
type Worker struct {
	b       Broker
	records RecordStore // may be nil: no status update on dead-lettering
	h       Handler
	cfg     Config
	log     *slog.Logger
}

// NewWorker returns a Worker for cfg (defaults applied). records may be nil, in which case a
// dead-lettered job's record status is not touched. Errors: EINVALID (bad config, nil broker or
// handler).
func NewWorker(b Broker, records RecordStore, h Handler, cfg Config) (*Worker, error) {
	if b == nil || h == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "queue worker: broker and handler are required")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("queue", cfg.Queue, "consumer", cfg.ConsumerID)
	return &Worker{b: b, records: records, h: h, cfg: cfg, log: log}, nil
}

// ConsumerID returns the worker's consumer id.
func (w *Worker) ConsumerID() string { return w.cfg.ConsumerID }

// Config returns the worker's effective configuration (defaults applied).
func (w *Worker) Config() Config { return w.cfg }

// Run consumes until ctx is canceled, then shuts down gracefully: it stops dequeuing, lets the
// running handlers finish (canceling their ctx only after ShutdownTimeout), settles their jobs,
// keeps heartbeating until then, and returns nil. Broker errors never end Run: each is logged,
// and the failing loop resumes after ErrorDelay.
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
	for {
		err := w.b.Heartbeat(ctx, w.cfg.Queue, w.cfg.ConsumerID, w.cfg.Lease)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		w.log.Error("queue heartbeat failed; retrying", "err", err, "delay", w.cfg.ErrorDelay)
		if !sleep(ctx, w.cfg.ErrorDelay) {
			return nil
		}
	}

	hbctx, hbcancel := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	bg.Go(func() { w.heartbeatLoop(hbctx) })
	bg.Go(func() { w.maintenanceLoop(ctx) })

	var consumers sync.WaitGroup
	for range w.cfg.Concurrency {
		consumers.Go(func() { w.consumeLoop(ctx, hctx) })
	}
	consumers.Wait()
	hbcancel() // running jobs are settled: the lease may lapse now
	bg.Wait()
	w.log.Info("queue worker stopped")
	return nil
}

// consumeLoop dequeues and handles jobs until ctx ends.
func (w *Worker) consumeLoop(ctx, hctx context.Context) {
	for ctx.Err() == nil {
		d, err := w.b.Dequeue(ctx, w.cfg.Queue, w.cfg.ConsumerID, w.cfg.BlockTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if redstate.IsCode(err, redstate.ECONFLICT) {
				// Our lease lapsed (e.g. heartbeats failed); renew it and go on.
				w.log.Warn("queue lease lost; renewing", "err", err)
				if herr := w.b.Heartbeat(ctx, w.cfg.Queue, w.cfg.ConsumerID, w.cfg.Lease); herr == nil {
					continue
				}
			}
			w.log.Error("queue dequeue failed; resuming after delay", "err", err, "delay", w.cfg.ErrorDelay)
			sleep(ctx, w.cfg.ErrorDelay)
			continue
		}
		if d == nil {
			continue // blocking timeout: listen again
		}
		w.handle(hctx, d)
	}
}

// Process handles one delivery exactly as Run does: it drops a malformed message, runs the
// handler, and acks, retries or dead-letters the job (setting the record's status 5 in the last
// case). It is exported for callers that drive their own Dequeue loop, and for tests; it uses
// no lease or maintenance goroutine. It returns when the job is settled or ctx ends.
func (w *Worker) Process(ctx context.Context, d *Delivery) { w.handle(ctx, d) }

// handle runs the handler on d and settles the job.
func (w *Worker) handle(ctx context.Context, d *Delivery) {
	log := w.log.With("raw", d.Raw)
	if d.DecodeErr != nil {
		log.Error("queue message malformed; dropping it", "err", d.DecodeErr)
		if w.settle(ctx, "ack", func(c context.Context) error { return w.b.Ack(c, d) }) {
			w.observe(OutcomeDropped, 0)
		}
		return
	}
	m := d.Message
	log = w.log.With("recordId", m.RecordID, "retryCount", m.RetryCount, "jobId", m.JobID)
	start := time.Now()
	err := w.call(ctx, d)
	dur := time.Since(start)

	switch {
	case err == nil:
		if w.settle(ctx, "ack", func(c context.Context) error { return w.b.Ack(c, d) }) {
			log.Info("queue job done", "duration", dur)
			w.observe(OutcomeAcked, dur)
		}
	case m.RetryCount < w.cfg.MaxRetries:
		next := m.NextRetry()
		delay := w.cfg.retryDelay(m.RetryCount)
		due := w.cfg.Now().Add(delay)
		if w.settle(ctx, "retry", func(c context.Context) error { return w.b.Retry(c, d, next, due) }) {
			log.Warn("queue job failed; retry scheduled", "err", err, "delay", delay, "due", due)
			w.observe(OutcomeRetried, dur)
		}
	default:
		if !w.settle(ctx, "bury", func(c context.Context) error { return w.b.Bury(c, d, m) }) {
			return
		}
		log.Error("queue job failed after last retry; dead-lettered", "err", err)
		w.observe(OutcomeDead, dur)
		if w.records != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.BlockTimeout)
			defer cancel()
			if _, serr := w.records.SetFailed(sctx, m.RecordID, err.Error()); serr != nil {
				// The job stays dead-lettered (the seed: 状态更新失败不影响死信处理).
				log.Error("queue: setting record status 5 failed", "err", serr)
			}
		}
	}
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

// settle runs op (Ack, Retry or Bury) until it succeeds and reports true. It gives up, reporting
// false, on ECONFLICT (the job was recovered after a lease expiry and will be redelivered) or
// when ctx ends (the job stays in-flight and is recovered once this consumer's lease lapses).
// Other errors are logged and retried after ErrorDelay.
func (w *Worker) settle(ctx context.Context, what string, op func(context.Context) error) bool {
	for {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.BlockTimeout)
		err := op(actx)
		cancel()
		switch {
		case err == nil:
			return true
		case redstate.IsCode(err, redstate.ECONFLICT):
			w.log.Warn("queue "+what+" found the job no longer in flight; it will be redelivered", "err", err)
			w.observe(OutcomeLost, 0)
			return false
		}
		w.log.Error("queue "+what+" failed; retrying after delay", "err", err, "delay", w.cfg.ErrorDelay)
		if !sleep(ctx, w.cfg.ErrorDelay) {
			return false
		}
	}
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
		if err := w.b.Heartbeat(ctx, w.cfg.Queue, w.cfg.ConsumerID, w.cfg.Lease); err != nil && ctx.Err() == nil {
			w.log.Error("queue heartbeat failed", "err", err)
		}
	}
}

// promoteBatch is how many due retries one PromoteDue call moves.
const promoteBatch = 100

// maintenanceLoop promotes due retries and recovers expired leases every PromoteInterval until
// ctx ends.
func (w *Worker) maintenanceLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.PromoteInterval)
	defer t.Stop()
	for {
		w.maintain(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maintain runs one maintenance round.
func (w *Worker) maintain(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := w.b.PromoteDue(ctx, w.cfg.Queue, w.cfg.Now(), promoteBatch)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Error("queue promote of due retries failed", "err", err)
			}
			break
		}
		if n < promoteBatch {
			break
		}
	}
	n, err := w.b.RecoverExpired(ctx, w.cfg.Queue)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Error("queue recovery of expired jobs failed", "err", err)
	case n > 0:
		w.log.Warn("queue recovered jobs of consumers whose lease expired", "jobs", n)
	}
}

// observe reports an outcome to the Observer, if any.
func (w *Worker) observe(outcome string, d time.Duration) {
	if w.cfg.Observer != nil {
		w.cfg.Observer.ObserveJob(w.cfg.Queue, outcome, d)
	}
}

// sleep waits d or until ctx ends; it reports whether the full wait elapsed.
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
