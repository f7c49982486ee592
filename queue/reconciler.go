package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
)

// Reconciler defaults.
const (
	// DefaultReconcileAge is how long a record may stay in status 3 before the reconciler
	// checks it.
	DefaultReconcileAge = 10 * time.Minute
	// DefaultReconcileInterval is how often Run reconciles.
	DefaultReconcileInterval = time.Minute
)

// ReconcilerConfig configures a Reconciler. Zero fields take the defaults stated on them.
type ReconcilerConfig struct {
	// Queue is the queue jobs are enqueued on. Default DefaultQueue.
	Queue string
	// Age is how long a record must have been in status 3 (since its last write) before it is
	// considered stranded. Keep it well above the longest job. Default 10m.
	Age time.Duration
	// Interval is how often Run reconciles. Default 1m.
	Interval time.Duration
	// Logger receives the reconciler's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock for EnqueueTime. Default time.Now.
	Now func() time.Time
}

// Reconciler finds records stranded in status 3 (生成中) with no job anywhere in the queue
// (pending, in-flight or retrying) — because a producer's enqueue failed (the seed keeps status
// 3 then), or a status-5 update failed after dead-lettering — and enqueues a new job for each.
type Reconciler struct {
	b       Broker
	records RecordStore
	cfg     ReconcilerConfig
	log     *slog.Logger
}

// NewReconciler returns a Reconciler. Errors: EINVALID (nil broker or store, bad config).
func NewReconciler(b Broker, records RecordStore, cfg ReconcilerConfig) (*Reconciler, error) {
	if b == nil || records == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "queue reconciler: broker and record store are required")
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := ValidateQueueName(cfg.Queue); err != nil {
		return nil, err
	}
	if cfg.Age < 0 || cfg.Interval < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "queue reconciler: Age and Interval must be positive")
	}
	return &Reconciler{b: b, records: records, cfg: cfg, log: cfg.Logger.With("queue", cfg.Queue)}, nil
}

// ReconcileOnce enqueues a job (RetryCount 0) for every record in status 3 for at least Age
// with no job for it in the queue, and returns how many it enqueued. A record whose status or
// UpdatedAt changed while it was checked is left alone. It costs one HasJobFor (O(queue
// length)) per candidate. Errors: EUNAVAILABLE (it stops at the first failure).
func (r *Reconciler) ReconcileOnce(ctx context.Context) (int, error) {
	ids, err := r.records.ListGeneratingOlderThan(ctx, r.cfg.Age)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		before, err := r.records.Get(ctx, id)
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			continue
		}
		if err != nil {
			return n, err
		}
		has, err := r.b.HasJobFor(ctx, r.cfg.Queue, id)
		if err != nil {
			return n, err
		}
		if has || before.Status != StatusGenerating {
			continue
		}
		after, err := r.records.Get(ctx, id)
		if err != nil || after.Status != StatusGenerating || !after.UpdatedAt.Equal(before.UpdatedAt) {
			continue // finished or regenerated meanwhile
		}
		if err := r.b.Enqueue(ctx, r.cfg.Queue, NewMessage(id, r.cfg.Now(), nil)); err != nil {
			return n, err
		}
		r.log.Warn("queue reconciler re-enqueued a stranded record", "recordId", id)
		n++
	}
	return n, nil
}

// Run reconciles every Interval until ctx ends, logging failures, and returns nil.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := r.ReconcileOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("queue reconciliation failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
