package report

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Reconciler defaults.
const (
	// DefaultReconcileAge is how long a record may stay in status 3 before the reconciler
	// checks it.
	DefaultReconcileAge = 10 * time.Minute
	// DefaultReconcileInterval is how often Run reconciles.
	DefaultReconcileInterval = time.Minute
	// DefaultNudgeRetryInterval is how often Run retries nudged records while their enqueue
	// keeps failing.
	DefaultNudgeRetryInterval = 2 * time.Second
)

// Nudger is told about a record a caller just left in status 3 (生成中) because its enqueue
// failed, so that it is enqueued as soon as the queue answers instead of after the
// reconciler's age. *Reconciler implements it.
type Nudger interface {
	// Nudge asks for record id to be checked promptly. It must not block.
	Nudge(id int64)
}

// ReconcilerSettings configures a Reconciler. Zero fields take the defaults stated on them.
type ReconcilerSettings struct {
	// Queue is the queue jobs are enqueued on. Default DefaultQueue.
	Queue string
	// Age is how long a record must have been in status 3 (since its last write) before it is
	// considered stranded. Keep it well above the longest job. Default 10m.
	Age time.Duration
	// Interval is how often Run reconciles. Default 1m.
	Interval time.Duration
	// NudgeRetryInterval is how often Run retries nudged records while their enqueue keeps
	// failing. Default 2s.
	NudgeRetryInterval time.Duration
	// Logger receives the reconciler's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock for EnqueueTime. Default time.Now.
	Now func() time.Time
}

// Reconciler finds records stranded in status 3 (生成中) with no job anywhere in the queue (pending,
// in-flight or retrying) — because a producer's enqueue failed (the record keeps status 3 then, so
// the submit still succeeds), or a status-5 update failed after dead-lettering — and enqueues a new
// job for each. Records it is nudged about (Nudge) are checked at once and then every
// NudgeRetryInterval until enqueued, whatever their age; the others once they have been in status 3
// for Age.
type Reconciler struct {
	b       queue.Broker
	records RecordStore
	cfg     ReconcilerSettings
	log     *slog.Logger

	mu sync.Mutex
	// nudged maps each nudged record not yet settled to when it was first nudged.
	nudged map[int64]time.Time
	wake   chan struct{}
}

// NewReconciler returns a Reconciler. Errors: EINVALID (nil broker or store, bad config).
func NewReconciler(b queue.Broker, records RecordStore, cfg ReconcilerSettings) (*Reconciler, error) {
	if b == nil || records == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "report reconciler: broker and record store are required")
	}
	if cfg.Queue == "" {
		cfg.Queue = DefaultQueue
	}
	if cfg.Age == 0 {
		cfg.Age = DefaultReconcileAge
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultReconcileInterval
	}
	if cfg.NudgeRetryInterval == 0 {
		cfg.NudgeRetryInterval = DefaultNudgeRetryInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := queue.ValidateQueueName(cfg.Queue); err != nil {
		return nil, err
	}
	if cfg.Age < 0 || cfg.Interval < 0 || cfg.NudgeRetryInterval < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "report reconciler: Age, Interval and NudgeRetryInterval must be positive")
	}
	return &Reconciler{b: b, records: records, cfg: cfg, log: cfg.Logger.With("queue", cfg.Queue),
		nudged: map[int64]time.Time{}, wake: make(chan struct{}, 1)}, nil
}

// Nudge asks the reconciler to check record id at once, whatever its age: the caller left it
// in status 3 because its enqueue failed. Run checks it every NudgeRetryInterval until it
// enqueued it or the record left status 3 or is gone. A job already in the queue does not
// settle the nudge: a failed enqueue may have reached only the master (a timeout, or WAIT
// short of redis.durability.wait-replicas), and a failover then loses that job; the record is
// watched until it leaves status 3, or for Age, after which the age-based pass covers it.
// Nudges live in memory: after a restart the age-based pass finds such records. Safe for
// concurrent use.
func (r *Reconciler) Nudge(id int64) {
	r.mu.Lock()
	if _, ok := r.nudged[id]; !ok {
		r.nudged[id] = r.cfg.Now()
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Nudged returns the ids nudged and not yet settled, ascending.
func (r *Reconciler) Nudged() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int64, 0, len(r.nudged))
	for id := range r.nudged {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// ReconcileNudged checks every nudged record (see Nudge) and returns how many it enqueued.
// A settled record is forgotten; one in status 3 whose job is in the queue stays nudged for
// Age; on the first failure it stops, keeping the rest. Errors: EUNAVAILABLE.
func (r *Reconciler) ReconcileNudged(ctx context.Context) (int, error) {
	n := 0
	for _, id := range r.Nudged() {
		res, err := r.enqueueIfStranded(ctx, id)
		if err != nil {
			return n, err
		}
		r.mu.Lock()
		if res != hasJob || r.cfg.Now().Sub(r.nudged[id]) >= r.cfg.Age {
			delete(r.nudged, id)
		}
		r.mu.Unlock()
		if res == enqueued {
			n++
		}
	}
	return n, nil
}

// ReconcileOnce enqueues a job (RetryCount 0) for every record in status 3 for at least Age
// with no job for it in the queue, and returns how many it enqueued. A record whose status or
// UpdatedAt changed while it was checked is left alone. It costs one Broker.HasJob (O(queue
// length)) per candidate. Errors: EUNAVAILABLE (it stops at the first failure).
func (r *Reconciler) ReconcileOnce(ctx context.Context) (int, error) {
	ids, err := r.records.ListGeneratingOlderThan(ctx, r.cfg.Age)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		res, err := r.enqueueIfStranded(ctx, id)
		if err != nil {
			return n, err
		}
		if res == enqueued {
			n++
		}
	}
	return n, nil
}

// checkResult is what enqueueIfStranded found and did.
type checkResult int

const (
	// settled: the record is gone, not in status 3, or changed while it was checked.
	settled checkResult = iota
	// hasJob: the record is in status 3 and the queue has a job for it.
	hasJob
	// enqueued: the record was in status 3 with no job, and one was enqueued.
	enqueued
)

// enqueueIfStranded enqueues a job for record id if it is in status 3 with no job in the
// queue, and says what it found. A record whose status or UpdatedAt changed while it was
// checked, or that is gone, is left alone.
func (r *Reconciler) enqueueIfStranded(ctx context.Context, id int64) (checkResult, error) {
	before, err := r.records.Get(ctx, id)
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		return settled, nil
	}
	if err != nil {
		return settled, err
	}
	if before.Status != StatusGenerating {
		return settled, nil
	}
	has, err := r.b.HasJob(ctx, r.cfg.Queue, IsJobFor(id))
	if err != nil {
		return settled, err
	}
	if has {
		return hasJob, nil
	}
	after, err := r.records.Get(ctx, id)
	if err != nil || after.Status != StatusGenerating || !after.UpdatedAt.Equal(before.UpdatedAt) {
		return settled, nil // finished or regenerated meanwhile
	}
	if err := r.b.Enqueue(ctx, r.cfg.Queue, NewJob(id, r.cfg.Now(), nil)); err != nil {
		return settled, err
	}
	r.log.Warn("queue reconciler re-enqueued a stranded record", "recordId", id)
	return enqueued, nil
}

// Run reconciles at once and then every Interval until ctx ends, checks nudged records as
// soon as they are nudged and then every NudgeRetryInterval while any remain, logs failures,
// and returns nil.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	retry := time.NewTimer(r.cfg.NudgeRetryInterval)
	retry.Stop()
	defer retry.Stop()
	full := true
	for {
		if full {
			if _, err := r.ReconcileOnce(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("queue reconciliation failed", "err", err)
			}
		}
		if _, err := r.ReconcileNudged(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("queue reconciliation of nudged records failed; retrying", "err", err, "retry_in", r.cfg.NudgeRetryInterval.String())
		}
		if len(r.Nudged()) > 0 {
			retry.Reset(r.cfg.NudgeRetryInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			full = true
		case <-r.wake:
			full = false
		case <-retry.C:
			full = false
		}
	}
}
