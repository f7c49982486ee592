package buildstatus

import "sync"

// WatchBuffer is how many events a watcher may fall behind before events are dropped and an
// EventGap stands in for them.
const WatchBuffer = 64

// EventQueue is one watcher's bounded queue of events, shared by the backends' Watch
// implementations. Publishers Offer without ever blocking; one consumer takes events with Next,
// waiting on Wake when the queue is empty.
//
// Overflow rule: when the queue is full, an offered event is dropped and a gap is owed. The
// owed gap is queued as an EventGap as soon as there is room, before any later event, so the
// consumer learns of the loss where it happened. A queued EventGap that is the newest entry
// also covers events dropped after it (a consumer resynchronises when it takes the gap, which
// is after those drops), so at most one gap is queued per overflow, however the consumer's
// reads interleave with the publishers.
type EventQueue struct {
	mu     sync.Mutex
	buffer int
	queue  []Event
	gap    bool          // events were dropped after the newest queued event; a gap is owed
	wake   chan struct{} // capacity 1: something was queued
	closed bool
}

// NewEventQueue returns an empty queue holding at most buffer events (WatchBuffer when
// buffer <= 0).
func NewEventQueue(buffer int) *EventQueue {
	if buffer <= 0 {
		buffer = WatchBuffer
	}
	return &EventQueue{buffer: buffer, wake: make(chan struct{}, 1)}
}

// Wake is signalled (capacity 1) whenever an event is queued.
func (q *EventQueue) Wake() <-chan struct{} { return q.wake }

// Offer queues ev, or drops it and owes an EventGap when the queue is full. It never blocks,
// and does nothing after Close.
func (q *EventQueue) Offer(ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.gap {
		if len(q.queue) >= q.buffer {
			return // still full: the owed gap covers ev too
		}
		q.queue = append(q.queue, Event{Type: EventGap, BuildID: ev.BuildID})
		q.gap = false
	}
	if len(q.queue) >= q.buffer {
		if q.queue[len(q.queue)-1].Type != EventGap {
			q.gap = true
		}
	} else {
		q.queue = append(q.queue, ev)
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Next returns the next event to deliver, turning an owed gap into an EventGap for buildID
// once the queue has drained; ok is false when there is nothing to deliver.
func (q *EventQueue) Next(buildID string) (ev Event, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		if !q.gap {
			return Event{}, false
		}
		q.gap = false
		return Event{Type: EventGap, BuildID: buildID}, true
	}
	ev = q.queue[0]
	q.queue[0] = Event{}
	q.queue = q.queue[1:]
	if len(q.queue) == 0 {
		q.queue = nil // let the backing array go
	}
	return ev, true
}

// Close drops every queued event; later Offers are ignored.
func (q *EventQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.queue = nil
}
