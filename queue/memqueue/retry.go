package memqueue

import (
	"context"
	"sort"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// PromoteDue implements queue.Broker.
func (b *Broker) PromoteDue(_ context.Context, name string, now time.Time, limit int) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "limit must be > 0")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	type entry struct {
		raw string
		due time.Time
	}
	var due []entry
	for _, set := range []map[string]time.Time{s.retry, s.scheduled} {
		for raw, t := range set {
			if !t.After(now) {
				due = append(due, entry{raw, t})
			}
		}
	}
	// Earliest first; ties by member, as a sorted set orders equal scores.
	sort.Slice(due, func(i, j int) bool {
		if !due[i].due.Equal(due[j].due) {
			return due[i].due.Before(due[j].due)
		}
		return due[i].raw < due[j].raw
	})
	if len(due) > limit {
		due = due[:limit]
	}
	raws := make([]string, len(due))
	for i, e := range due {
		delete(s.retry, e.raw)
		delete(s.scheduled, e.raw)
		raws[i] = e.raw
	}
	s.push(raws...)
	b.movePending(s, raws)
	return len(raws), nil
}

// NextDue implements queue.DueReader: the earliest due time of queue's retry schedule and
// scheduled set.
func (b *Broker) NextDue(_ context.Context, name string) (time.Time, bool, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return time.Time{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	var next time.Time
	found := false
	for _, set := range []map[string]time.Time{s.retry, s.scheduled} {
		for _, t := range set {
			if !found || t.Before(next) {
				next, found = t, true
			}
		}
	}
	return next, found, nil
}
