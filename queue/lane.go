package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/outagelog"
)

// lane is the part of a Worker that serves one of its queues: the queue's handler and
// settings, the jobs the worker holds from it, the consumer's lease on it and the queue's
// background loops (heartbeats with cancel requests, promotion of due jobs, recovery of expired
// leases, the in-flight audit). A Worker of one queue (NewWorker) has one lane; a pool
// (NewPool) has one per queue, and its handler goroutines run the jobs of all of them.
type lane struct {
	b   Broker
	h   Handler
	cfg WorkerSettings // defaults applied; a pool's lanes carry the pool's consumer id and concurrency
	// weight is the queue's share of a weighted pool, or its priority in a strict one (1 for a
	// Worker of one queue).
	weight int
	log    *slog.Logger
	outage *outagelog.Log // one log line per backend state change
	// holding is what the worker holds of this queue, for the in-flight audit (releaseOrphans).
	holding *holding
	// running are the queue's running handlers, for cancel requests and lease lapses.
	running *runningJobs
	// lease stops the running handlers before the consumer's lease on this queue can expire
	// while heartbeats fail (armed by Run's heartbeats; Process alone never lapses).
	lease *leaseWatch
	// failedUntil is when the dispatcher may ask the queue again after a broker error (only
	// the dispatcher's goroutine reads and writes it).
	failedUntil time.Time
}

// newLane returns the lane of cfg's queue (cfg complete: defaults applied, validated).
func newLane(b Broker, h Handler, cfg WorkerSettings, weight int) *lane {
	log := cfg.Logger.With("queue", cfg.Queue, "consumer", cfg.ConsumerID)
	running := newRunningJobs()
	return &lane{b: b, h: h, cfg: cfg, weight: weight, log: log, outage: outagelog.New(log, "queue backend"), holding: newHolding(),
		running: running, lease: newLeaseWatch(cfg.Lease, max(cfg.Lease/3, time.Millisecond), running)}
}

// runLoops starts the queue's background loops on bg: heartbeats until hbctx ends (they keep
// the lease while running jobs finish after ctx), promotion and maintenance until ctx ends.
func (l *lane) runLoops(ctx, hbctx context.Context, bg *sync.WaitGroup) {
	bg.Go(func() { l.heartbeatLoop(hbctx) })
	bg.Go(func() { l.maintenanceLoop(ctx) })
	bg.Go(func() { l.promoteLoop(ctx) })
}

// dequeue asks the broker for up to n jobs of the queue, waiting at most timeout when it has
// none. On a broker error it logs, and the lane is skipped until ErrorDelay has passed; when
// the lease was lost (ECONFLICT) it renews it first and is asked again at once if that works.
func (l *lane) dequeue(ctx context.Context, n int, timeout time.Duration) []*Delivery {
	ds, err := l.b.DequeueBatch(ctx, l.cfg.Queue, l.cfg.ConsumerID, n, timeout)
	if err == nil {
		l.outage.OK(ctx)
		return ds
	}
	if ctx.Err() != nil {
		return nil
	}
	if redstate.IsCode(err, redstate.ECONFLICT) {
		// Our lease lapsed (e.g. heartbeats failed); renew it and go on.
		l.log.Warn("queue lease lost; renewing", "err", err)
		if l.heartbeat(ctx) == nil {
			return nil
		}
	}
	l.outage.Failed(ctx, "queue dequeue failed", err)
	l.failedUntil = time.Now().Add(l.cfg.ErrorDelay)
	return nil
}

// release gives prefetched jobs that no handler started back to the head of the pending list,
// in order, retrying every ErrorDelay until it succeeds or ctx ends (then they stay in flight
// and are recovered once the lease lapses).
func (l *lane) release(ctx context.Context, ds []*Delivery) {
	if len(ds) == 0 {
		return
	}
	var n int
	if !l.settle(ctx, "release", func(c context.Context) (err error) {
		n, err = l.b.Release(c, ds)
		return err
	}) {
		return
	}
	if n < len(ds) {
		l.log.Warn("queue released prefetched jobs; some were no longer in flight (recovered after a lease expiry)", "released", n, "prefetched", len(ds))
		return
	}
	l.log.Info("queue released prefetched jobs to the head of the queue", "jobs", n)
}

// heartbeat renews the consumer's lease and, when it succeeded, re-arms the lease watch from the
// time the renewal was sent.
func (l *lane) heartbeat(ctx context.Context) error {
	sent := time.Now()
	err := l.b.Heartbeat(ctx, l.cfg.Queue, l.cfg.ConsumerID, l.cfg.Lease)
	if err == nil {
		l.lease.renewed(sent)
	}
	return err
}

// heartbeatLoop renews the lease every Lease/3 until ctx ends.
func (l *lane) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(max(l.cfg.Lease/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := l.heartbeat(ctx); err != nil && ctx.Err() == nil {
			l.outage.Failed(ctx, "queue heartbeat failed", err)
		} else if err == nil {
			l.outage.OK(ctx)
			l.cancelRequested(ctx)
		}
	}
}

// cancelRequested cancels the ctx of every running job with a record whose cancel CancelJob
// requested. It asks the broker only while such jobs run.
func (l *lane) cancelRequested(ctx context.Context) {
	ids := l.running.ids()
	if len(ids) == 0 {
		return
	}
	asked, err := l.b.CancelRequested(ctx, l.cfg.Queue, ids)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("queue cancel requests could not be read; asking again at the next heartbeat", "err", err)
		}
		return
	}
	for _, id := range asked {
		l.log.Info("queue job cancel requested; stopping its handler", "jobId", id)
		l.running.cancel(id)
	}
}

// promoteBatch is how many due retries one PromoteDue call moves.
const promoteBatch = 100

// maintenanceLoop recovers expired leases and releases this consumer's stranded jobs every
// PromoteInterval until ctx ends (promoteLoop promotes due jobs).
func (l *lane) maintenanceLoop(ctx context.Context) {
	t := time.NewTicker(l.cfg.PromoteInterval)
	defer t.Stop()
	suspects := map[string]time.Time{}
	for {
		l.maintain(ctx)
		l.releaseOrphans(ctx, suspects)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DuePromoteInterval is the longest wait of the worker's promote loop between two PromoteDue
// calls (WorkerSettings.PromoteInterval when shorter). With a broker that is a DueReader (both
// of redstate's are), the loop also wakes at the due time of the earliest scheduled job or
// retry when that comes sooner, so a job reaches the pending list at its time; a job scheduled
// less than this far ahead while the loop waits is promoted at the loop's next wake-up.
const DuePromoteInterval = 50 * time.Millisecond

// minPromoteWait is the shortest wait of the promote loop, so that an entry the broker reports
// due but PromoteDue does not move yet (a clock step between the two) cannot make it spin.
const minPromoteWait = time.Millisecond

// promoteLoop moves due scheduled jobs and retries to the pending list until ctx ends: every
// min(PromoteInterval, DuePromoteInterval), or at the next due time when that is sooner.
func (l *lane) promoteLoop(ctx context.Context) {
	interval := min(l.cfg.PromoteInterval, DuePromoteInterval)
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		l.promote(ctx)
		t.Reset(l.untilNextDue(ctx, interval))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// untilNextDue returns how long the promote loop waits: until the queue's next due time when
// the broker tells it and it comes within interval, else interval.
func (l *lane) untilNextDue(ctx context.Context, interval time.Duration) time.Duration {
	dr, ok := l.b.(DueReader)
	if !ok {
		return interval
	}
	next, ok, err := dr.NextDue(ctx, l.cfg.Queue)
	if err != nil || !ok {
		return interval // an error is met, and logged, by the next PromoteDue
	}
	// Due times are kept in whole milliseconds (Redis scores): waking a millisecond after the
	// stored one never promotes a job before the instant it asked for.
	return max(min(next.Add(time.Millisecond).Sub(l.cfg.Now()), interval), minPromoteWait)
}

// promote moves every due scheduled job and retry to the pending list, promoteBatch at a time.
func (l *lane) promote(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := l.b.PromoteDue(ctx, l.cfg.Queue, l.cfg.Now(), promoteBatch)
		if err != nil {
			if ctx.Err() == nil {
				l.outage.Failed(ctx, "queue promote due retries failed", err)
			}
			break
		}
		if n < promoteBatch {
			break
		}
	}
}

// maintain runs one maintenance round: it recovers the jobs of consumers whose lease expired.
func (l *lane) maintain(ctx context.Context) {
	n, err := l.b.RecoverExpired(ctx, l.cfg.Queue)
	switch {
	case err != nil && ctx.Err() == nil:
		l.outage.Failed(ctx, "queue recover expired leases failed", err)
	case n > 0:
		l.log.Warn("queue recovered jobs of consumers whose lease expired", "jobs", n)
	}
}

// observe passes an outcome to the Observer, if any.
func (l *lane) observe(outcome string, d time.Duration) {
	if l.cfg.Observer != nil {
		l.cfg.Observer.ObserveJob(l.cfg.Queue, outcome, d)
	}
}

// observeLatency tells a LatencyObserver the latency of job m, done after running for ran.
func (l *lane) observeLatency(m Message, ran time.Duration) {
	lo, ok := l.cfg.Observer.(LatencyObserver)
	if !ok {
		return
	}
	latency := ran
	if !m.EnqueueTime.IsZero() {
		latency = max(ran, l.cfg.Now().Sub(m.EnqueueTime))
	}
	lo.ObserveLatency(l.cfg.Queue, latency)
}
