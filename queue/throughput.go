package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// ThroughputTTL is how long the per-minute job counts are kept.
const ThroughputTTL = 48 * time.Hour

// MaxThroughputMinutes bounds one ThroughputStore.Range read (one day).
const MaxThroughputMinutes = 24 * 60

// ValidateThroughputRange checks a ThroughputStore.Throughput range: from..to inclusive, 1 to
// MaxThroughputMinutes minutes. Errors: EINVALID.
func ValidateThroughputRange(from, to int64) error {
	if to < from || to-from+1 > MaxThroughputMinutes {
		return redstate.Errorf(redstate.EINVALID, "throughput range must hold 1..%d minutes, got %d..%d", MaxThroughputMinutes, from, to)
	}
	return nil
}

// ThroughputStore keeps per-minute counts of handled jobs per queue and outcome, shared by every
// instance (redisqueue keeps them in Redis, one hash per queue and minute, ThroughputTTL), so
// that every instance's dashboard shows the same figures. *redisqueue.Broker and
// *memqueue.Broker implement it.
type ThroughputStore interface {
	// AddThroughput adds counts (outcome → jobs) to queue's minute (Unix time / 60): it is
	// AddThroughputBatch with a batch id of its own. Errors: EINVALID (queue name),
	// EUNAVAILABLE.
	AddThroughput(ctx context.Context, queue string, minute int64, counts map[string]int64) error
	// AddThroughputBatch adds counts to queue's minute once per batch id (ValidateBatchID):
	// a batch whose id was added to queue less than DedupWindow ago is not added again, so a
	// batch whose add failed with EUNAVAILABLE (applied or not) is repeated with its id.
	// Errors: EINVALID (queue name, batch id), EUNAVAILABLE.
	AddThroughputBatch(ctx context.Context, queue string, minute int64, batch string, counts map[string]int64) error
	// Throughput returns queue's counts of the minutes from..to (inclusive, at most
	// MaxThroughputMinutes): minute → outcome → jobs; minutes without jobs are absent.
	// Errors: EINVALID, EUNAVAILABLE.
	Throughput(ctx context.Context, queue string, from, to int64) (map[int64]map[string]int64, error)
}

// ThroughputCounter is an Observer that counts outcomes per queue and minute in memory and flushes
// them to a ThroughputStore at the interval NewThroughputCounter was given (Run), so counting never
// adds a round trip to a job. Counts of a process that dies are lost since its last flush (at most
// one interval's worth). A batch whose add failed is added again by the next flush, unchanged and
// under the same batch id, so that it counts once even when the failed add was applied (the store
// answered too late): see AddThroughputBatch.
type ThroughputCounter struct {
	store ThroughputStore
	every time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu        sync.Mutex
	pending   map[throughputKey]int64
	unsettled []throughputBatch // batches whose add failed, in order
}

type throughputKey struct {
	queue, outcome string
	minute         int64
}

// throughputBatch is one AddThroughputBatch call of a flush.
type throughputBatch struct {
	queue  string
	minute int64
	id     string
	counts map[string]int64
}

// maxBatchIDLen bounds a throughput batch id.
const maxBatchIDLen = 64

// ValidateBatchID checks a throughput batch id: 1..64 letters, digits, '-' and '_' (NewJobID's
// ids qualify). Errors: EINVALID.
func ValidateBatchID(id string) error {
	if id == "" || len(id) > maxBatchIDLen {
		return redstate.Errorf(redstate.EINVALID, "throughput batch id must be 1..%d characters", maxBatchIDLen)
	}
	if keyspace.InvalidIDByte(id, keyspace.TokenPunct) >= 0 {
		return redstate.Errorf(redstate.EINVALID, "throughput batch id %q: only letters, digits, '-' and '_' are allowed", id)
	}
	return nil
}

// NewThroughputCounter returns a counter flushing to store every every (default 5 s).
func NewThroughputCounter(store ThroughputStore, every time.Duration, log *slog.Logger) *ThroughputCounter {
	if every <= 0 {
		every = 5 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ThroughputCounter{store: store, every: every, now: time.Now, log: log, pending: map[throughputKey]int64{}}
}

// ObserveJob implements Observer.
func (r *ThroughputCounter) ObserveJob(queue, outcome string, _ time.Duration) {
	k := throughputKey{queue: queue, outcome: outcome, minute: r.now().Unix() / 60}
	r.mu.Lock()
	r.pending[k]++
	r.mu.Unlock()
}

// Flush adds the batches of earlier flushes that failed, then the pending counts, one batch
// per queue and minute; a batch that fails is kept, with its id, for the next flush.
func (r *ThroughputCounter) Flush(ctx context.Context) error {
	r.mu.Lock()
	batches := r.unsettled
	r.unsettled = nil
	pending := r.pending
	r.pending = map[throughputKey]int64{}
	r.mu.Unlock()
	type qm struct {
		queue  string
		minute int64
	}
	grouped := map[qm]map[string]int64{}
	var order []qm
	for k, n := range pending {
		g := qm{k.queue, k.minute}
		if grouped[g] == nil {
			grouped[g] = map[string]int64{}
			order = append(order, g)
		}
		grouped[g][k.outcome] += n
	}
	for _, g := range order {
		batches = append(batches, throughputBatch{queue: g.queue, minute: g.minute, id: NewJobID(), counts: grouped[g]})
	}
	var first error
	for _, bt := range batches {
		if err := r.store.AddThroughputBatch(ctx, bt.queue, bt.minute, bt.id, bt.counts); err != nil {
			if first == nil {
				first = err
			}
			r.mu.Lock()
			r.unsettled = append(r.unsettled, bt)
			r.mu.Unlock()
		}
	}
	return first
}

// Run flushes at the counter's interval until ctx ends, then once more.
func (r *ThroughputCounter) Run(ctx context.Context) error {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := r.Flush(fctx); err != nil {
				r.log.Warn("queue throughput: last flush failed; counts since the previous one are lost", "err", err)
			}
			return nil
		case <-t.C:
			if err := r.Flush(ctx); err != nil {
				r.log.Warn("queue throughput flush failed; retrying with the next one", "err", err)
			}
		}
	}
}

// MultiObserver passes every observation to each of its observers.
type MultiObserver []Observer

// ObserveJob implements Observer.
func (m MultiObserver) ObserveJob(queue, outcome string, d time.Duration) {
	for _, o := range m {
		if o != nil {
			o.ObserveJob(queue, outcome, d)
		}
	}
}

// ObserveLatency implements LatencyObserver: it passes the latency to each observer that
// implements it.
func (m MultiObserver) ObserveLatency(queue string, latency time.Duration) {
	for _, o := range m {
		if lo, ok := o.(LatencyObserver); ok {
			lo.ObserveLatency(queue, latency)
		}
	}
}
