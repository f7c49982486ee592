package redisstore

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// Event payloads. saveScript PUBLISHes on keys.Events(id) the stored document itself (a JSON
// object, so it starts with '{'); the watcher computes its ETag. deleteScript publishes the
// word "deleted". Nothing is concatenated or re-encoded inside Lua. The build id is not
// repeated: it is the channel's. PUBLISH is not a key operation, so it
// works from scripts on Cluster too, where it is broadcast to every node.

// watchBuffer is how many events a slow watcher may lag behind before events are dropped and
// an EventGap is queued in their place.
const watchBuffer = 64

// Watch implements buildstatus.Store. It SUBSCRIBEs to keys.Events(buildID) on a dedicated
// connection and returns only once Redis has confirmed the subscription, so every change
// committed after Watch returns is delivered. Two goroutines serve the stream: one reads
// messages, one queues up to watchBuffer events for the caller. When the queue is full the
// newest queued event becomes an EventGap and later events are dropped until the caller
// catches up; a lost connection (messages may have been missed while go-redis reconnects and
// resubscribes) also yields an EventGap. The channel closes when ctx ends.
func (s *Store) Watch(ctx context.Context, buildID string) (<-chan buildstatus.Event, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	ps := s.client.Subscribe(ctx, s.keys.Events(buildID))
	msg, err := ps.Receive(ctx)
	if err != nil {
		_ = ps.Close()
		return nil, mapErr(err, "watching build "+buildID)
	}
	if _, ok := msg.(*redis.Subscription); !ok {
		_ = ps.Close()
		return nil, redstate.Errorf(redstate.EINTERNAL, "watching build %s: unexpected first reply %T", buildID, msg)
	}
	in := make(chan buildstatus.Event)
	out := make(chan buildstatus.Event)
	go readEvents(ctx, ps, buildID, in)
	go forwardEvents(ctx, ps, in, out)
	return out, nil
}

// readEvents turns Pub/Sub messages into Events and hands them to in until ctx ends.
func readEvents(ctx context.Context, ps *redis.PubSub, buildID string, in chan<- buildstatus.Event) {
	for {
		m, err := ps.ReceiveMessage(ctx)
		var ev buildstatus.Event
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// go-redis reconnects and resubscribes on the next receive; anything published
			// meanwhile is lost.
			ev = buildstatus.Event{Type: buildstatus.EventGap, BuildID: buildID}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		} else {
			var ok bool
			if ev, ok = parseEvent(m.Payload, buildID); !ok {
				continue
			}
		}
		select {
		case in <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// forwardEvents queues events from in for out, replacing overflow with an EventGap, and
// closes out and the subscription when ctx ends.
func forwardEvents(ctx context.Context, ps *redis.PubSub, in <-chan buildstatus.Event, out chan<- buildstatus.Event) {
	defer close(out)
	defer ps.Close()
	var queue []buildstatus.Event
	for {
		var send chan<- buildstatus.Event
		var next buildstatus.Event
		if len(queue) > 0 {
			send, next = out, queue[0]
		}
		select {
		case <-ctx.Done():
			return
		case ev := <-in:
			switch {
			case len(queue) < watchBuffer:
				queue = append(queue, ev)
			case queue[len(queue)-1].Type != buildstatus.EventGap:
				queue[len(queue)-1] = buildstatus.Event{Type: buildstatus.EventGap, BuildID: ev.BuildID}
			}
		case send <- next:
			queue = queue[1:]
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
