package resilientstore

import (
	"context"
	"time"

	"github.com/redstate/redstate/buildstatus"
)

// Watch implements buildstatus.Store. With the fallback policy it merges the memory stream
// (fallback writes) with the Redis stream, resubscribing to Redis while it is unavailable; an
// EventGap marks every Redis (re)subscription after the first.
//
// Watch never goes through the circuit breaker: a stream is long-lived, its subscription
// failures say nothing about the health of reads and writes, and many failing subscriptions
// (a client reconnecting in a loop, a subscription limit) must not open the breaker and fail
// every write.
func (s *Store) Watch(ctx context.Context, buildID string) (<-chan buildstatus.Event, error) {
	if !s.fallback {
		return s.primary.Watch(ctx, buildID)
	}
	ctx, cancel := context.WithCancel(ctx)
	memCh, err := s.mem.Watch(ctx, buildID)
	if err != nil {
		cancel()
		return nil, err
	}
	primCh, err := s.primary.Watch(ctx, buildID)
	if err != nil && !isUnavailable(err) {
		cancel()
		return nil, err
	}
	out := make(chan buildstatus.Event, 16)
	go s.merge(ctx, cancel, buildID, memCh, primCh, out)
	return out, nil
}

// merge forwards both streams to out until ctx ends, then closes out.
func (s *Store) merge(ctx context.Context, cancel context.CancelFunc, buildID string, memCh, primCh <-chan buildstatus.Event, out chan<- buildstatus.Event) {
	defer close(out)
	defer cancel()
	send := func(ev buildstatus.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var retry <-chan time.Time
	if primCh == nil {
		retry = time.After(s.interval)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-memCh:
			if !ok {
				memCh = nil // memory store closed; Redis events still flow
				continue
			}
			if s.forwardMemEvent(ev) && !send(ev) {
				return
			}
		case ev, ok := <-primCh:
			if !ok {
				primCh, retry = nil, time.After(s.interval)
				continue
			}
			if !send(ev) {
				return
			}
		case <-retry:
			retry = nil
			ch, err := s.primary.Watch(ctx, buildID)
			if err != nil {
				retry = time.After(s.interval)
				continue
			}
			primCh = ch
			if !send(buildstatus.Event{Type: buildstatus.EventGap, BuildID: buildID}) {
				return
			}
		}
	}
}

// forwardMemEvent reports whether a memory-store event is a client-visible change. Deletions
// in memory also happen when a written-back copy is dropped; only those of a pending tombstone
// are real.
func (s *Store) forwardMemEvent(ev buildstatus.Event) bool {
	if ev.Type != buildstatus.EventDeleted {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[ev.BuildID]
	return p != nil && p.deleted
}
