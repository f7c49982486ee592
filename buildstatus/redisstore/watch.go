package redisstore

import (
	"context"
	"strings"

	"github.com/redstate/redstate/buildstatus"
)

// Event payloads. saveScript PUBLISHes on keys.Events(id) the stored document itself (a JSON
// object, so it starts with '{'); the watcher computes its ETag. deleteScript publishes the
// word "deleted". Nothing is concatenated or re-encoded inside Lua. The build id is not
// repeated: it is the channel's. PUBLISH is not a key operation, so it
// works from scripts on Cluster too, where it is broadcast to every node.

// Watch implements buildstatus.Store. Every watch of the Store shares one Pub/Sub connection
// (hub.go). Watch returns only once Redis has confirmed the subscription to
// keys.Events(buildID), so every change committed after Watch returns is delivered. Up to
// buildstatus.WatchBuffer events queue for a slow caller; past that, events are dropped and an
// EventGap stands in for them (buildstatus.EventQueue). A lost connection also yields an
// EventGap. The channel closes when ctx ends or the Store is closed.
func (s *Store) Watch(ctx context.Context, buildID string) (<-chan buildstatus.Event, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	channel := s.keys.Events(buildID)
	q := buildstatus.NewEventQueue(buildstatus.WatchBuffer)
	if err := s.hub.add(ctx, channel, buildID, q); err != nil {
		return nil, mapErr(err, "watching build "+buildID)
	}
	out := make(chan buildstatus.Event)
	go s.forwardEvents(ctx, channel, buildID, q, out)
	return out, nil
}

// forwardEvents moves q's events to out until ctx ends or the Store closes, then unregisters
// q and closes out.
func (s *Store) forwardEvents(ctx context.Context, channel, buildID string, q *buildstatus.EventQueue, out chan<- buildstatus.Event) {
	defer close(out)
	defer s.hub.remove(channel, q)
	for {
		ev, ok := q.Next(buildID)
		if !ok {
			select {
			case <-q.Wake():
				continue
			case <-ctx.Done():
				return
			case <-s.hub.ctx.Done():
				return
			}
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		case <-s.hub.ctx.Done():
			return
		}
	}
}

// parseEvent decodes a payload written by saveScript or deleteScript.
func parseEvent(payload, buildID string) (buildstatus.Event, bool) {
	switch {
	case strings.HasPrefix(payload, "{"):
		doc := []byte(payload)
		return buildstatus.Event{Type: buildstatus.EventSaved, BuildID: buildID, ETag: buildstatus.ETagOf(doc), Build: doc}, true
	case payload == buildstatus.EventDeleted:
		return buildstatus.Event{Type: buildstatus.EventDeleted, BuildID: buildID}, true
	}
	return buildstatus.Event{}, false
}
