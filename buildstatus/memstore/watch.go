package memstore

import (
	"context"
	"sync"

	"github.com/redstate/redstate/buildstatus"
)

// WatchBuffer is how many events a watcher may fall behind before events are dropped and an
// EventGap is queued in their place.
const WatchBuffer = buildstatus.WatchBuffer

// watchers is the registry of Watch subscribers, per build id.
type watchers struct {
	mu   sync.Mutex
	subs map[string]map[*buildstatus.EventQueue]struct{}
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
		sub.Offer(own)
	}
}

// Watch implements buildstatus.Store. The subscription is in place when Watch returns, so every
// change made after it returns is delivered (or covered by an EventGap). The stream ends, and
// the channel is closed, when ctx ends or the store is closed.
func (s *Store) Watch(ctx context.Context, buildID string) (<-chan buildstatus.Event, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	sub := buildstatus.NewEventQueue(WatchBuffer)
	s.watchers.mu.Lock()
	if s.watchers.subs[buildID] == nil {
		s.watchers.subs[buildID] = make(map[*buildstatus.EventQueue]struct{})
	}
	s.watchers.subs[buildID][sub] = struct{}{}
	s.watchers.mu.Unlock()

	out := make(chan buildstatus.Event)
	go s.forward(ctx, buildID, sub, out)
	return out, nil
}

// forward delivers sub's events to out until ctx ends or the store closes, then unregisters
// sub and closes out.
func (s *Store) forward(ctx context.Context, buildID string, sub *buildstatus.EventQueue, out chan<- buildstatus.Event) {
	defer close(out)
	defer s.watchers.unsubscribe(buildID, sub)
	for {
		ev, ok := sub.Next(buildID)
		if !ok {
			select {
			case <-sub.Wake():
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

// unsubscribe removes sub and drops what it still queued.
func (w *watchers) unsubscribe(buildID string, sub *buildstatus.EventQueue) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sub.Close()
	delete(w.subs[buildID], sub)
	if len(w.subs[buildID]) == 0 {
		delete(w.subs, buildID)
	}
}
