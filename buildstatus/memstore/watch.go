package memstore

import (
	"context"
	"sync"

	"github.com/redstate/redstate/buildstatus"
)

// WatchBuffer is how many events a watcher may fall behind before events are dropped and an
// EventGap is queued in their place.
const WatchBuffer = 64

// watchers is the registry of Watch subscribers, per build id.
type watchers struct {
	mu   sync.Mutex
	subs map[string]map[*subscriber]struct{}
}

// subscriber is one Watch stream. Writers append to queue without ever blocking; a forwarding
// goroutine moves queued events to the caller's channel.
type subscriber struct {
	mu     sync.Mutex
	queue  []buildstatus.Event
	gap    bool          // events were dropped; an EventGap is owed
	wake   chan struct{} // capacity 1: something was queued
	closed bool
}

// publish hands ev to every watcher of ev.BuildID. It never blocks. Callers hold Store.mu for
// writing, so every watcher sees a build's events in write order.
func (w *watchers) publish(ev buildstatus.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for sub := range w.subs[ev.BuildID] {
		own := ev
		if ev.Build != nil {
			own.Build = append([]byte(nil), ev.Build...)
		}
		sub.offer(own)
	}
}

// offer queues ev, or drops it and owes an EventGap when the queue is full.
func (sub *subscriber) offer(ev buildstatus.Event) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.closed {
		return
	}
	if sub.gap {
		if len(sub.queue) >= WatchBuffer {
			return
		}
		sub.queue = append(sub.queue, buildstatus.Event{Type: buildstatus.EventGap, BuildID: ev.BuildID})
		sub.gap = false
	}
	if len(sub.queue) >= WatchBuffer {
		sub.gap = true
	} else {
		sub.queue = append(sub.queue, ev)
	}
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// next returns the next event to deliver, turning an owed gap into an event once the queue
// has drained.
func (sub *subscriber) next(buildID string) (buildstatus.Event, bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if len(sub.queue) == 0 {
		if !sub.gap {
			return buildstatus.Event{}, false
		}
		sub.gap = false
		return buildstatus.Event{Type: buildstatus.EventGap, BuildID: buildID}, true
	}
	ev := sub.queue[0]
	sub.queue[0] = buildstatus.Event{}
	sub.queue = sub.queue[1:]
	if len(sub.queue) == 0 {
		sub.queue = nil // let the backing array go
	}
	return ev, true
}

// Watch implements buildstatus.Store. The subscription is in place when Watch returns, so every
// change made after it returns is delivered (or covered by an EventGap). The stream ends, and
// the channel is closed, when ctx ends or the store is closed.
func (s *Store) Watch(ctx context.Context, buildID string) (<-chan buildstatus.Event, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	sub := &subscriber{wake: make(chan struct{}, 1)}
	s.watchers.mu.Lock()
	if s.watchers.subs[buildID] == nil {
		s.watchers.subs[buildID] = make(map[*subscriber]struct{})
	}
	s.watchers.subs[buildID][sub] = struct{}{}
	s.watchers.mu.Unlock()

	out := make(chan buildstatus.Event)
	go s.forward(ctx, buildID, sub, out)
	return out, nil
}

// forward delivers sub's events to out until ctx ends or the store closes, then unregisters
// sub and closes out.
func (s *Store) forward(ctx context.Context, buildID string, sub *subscriber, out chan<- buildstatus.Event) {
	defer close(out)
	defer s.watchers.unsubscribe(buildID, sub)
	for {
		ev, ok := sub.next(buildID)
		if !ok {
			select {
			case <-sub.wake:
				continue
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
}

func (w *watchers) unsubscribe(buildID string, sub *subscriber) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sub.mu.Lock()
	sub.closed = true
	sub.queue = nil
	sub.mu.Unlock()
	delete(w.subs[buildID], sub)
	if len(w.subs[buildID]) == 0 {
		delete(w.subs, buildID)
	}
}
