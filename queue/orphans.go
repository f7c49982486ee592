package queue

import (
	"context"
	"sync"
	"time"
)

// holding is the multiset of jobs (by stored string) a Worker holds: dequeued and not yet
// settled. The dispatcher adds, handlers remove, the maintenance goroutine reads.
type holding struct {
	mu   sync.Mutex
	raws map[string]int
}

func newHolding() *holding { return &holding{raws: map[string]int{}} }

// add records ds as held.
func (h *holding) add(ds []*Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range ds {
		h.raws[d.Raw]++
	}
}

// remove records that d is settled.
func (h *holding) remove(d *Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.raws[d.Raw] <= 1 {
		delete(h.raws, d.Raw)
		return
	}
	h.raws[d.Raw]--
}

// has reports whether a job stored as raw is held.
func (h *holding) has(raw string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.raws[raw] > 0
}

// releaseOrphans gives back to the head of the pending list the jobs in flight at this worker's
// consumer id that the worker has not held for at least one Lease. Such a job is stranded: a
// settle the worker saw succeed was rolled back by a Redis failover (the promoted replica had
// not received it), or a dequeue's reply never arrived. As the consumer keeps its lease,
// RecoverExpired would never move it. Waiting one Lease (the time RecoverExpired gives a
// silent consumer) makes sure a dequeue still being answered is not mistaken for one. It runs
// on the maintenance goroutine; seen maps each suspect to when it was first found.
func (l *lane) releaseOrphans(ctx context.Context, seen map[string]time.Time) {
	inflight, err := l.b.InFlight(ctx, l.cfg.Queue, l.cfg.ConsumerID)
	if err != nil {
		if ctx.Err() == nil {
			l.outage.Failed(ctx, "queue in-flight audit failed", err)
		}
		return
	}
	now := l.cfg.Now()
	var orphans []*Delivery
	suspects := make(map[string]bool, len(seen))
	for _, d := range inflight {
		if l.holding.has(d.Raw) {
			continue
		}
		suspects[d.Raw] = true
		first, ok := seen[d.Raw]
		switch {
		case !ok:
			seen[d.Raw] = now
		case now.Sub(first) >= l.cfg.Lease:
			orphans = append(orphans, d)
		}
	}
	for raw := range seen {
		if !suspects[raw] {
			delete(seen, raw) // settled or recovered meanwhile
		}
	}
	if len(orphans) == 0 {
		return
	}
	n, err := l.b.Release(ctx, orphans)
	if err != nil {
		if ctx.Err() == nil {
			l.outage.Failed(ctx, "queue release of stranded in-flight jobs failed", err)
		}
		return // retried on the next tick
	}
	for _, d := range orphans {
		delete(seen, d.Raw)
	}
	l.log.Warn("queue released jobs in flight at this consumer that it did not hold (a settle rolled back by a Redis failover, or a lost dequeue reply); they run again", "jobs", n)
}
