package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// hub multiplexes every Watch of a Store over one Pub/Sub connection: a channel is SUBSCRIBEd
// when its first watcher arrives and UNSUBSCRIBEd when its last one leaves, and one reader
// goroutine fans each message out to the channel's watchers' queues in process. So 10,000
// streams cost one Redis connection, not 10,000.
//
// The connection is opened on first use. go-redis reconnects it and resubscribes every channel
// after a failure; messages published meanwhile are lost, so every watcher then gets an
// EventGap. A PING every hubPingInterval detects a connection that died silently.
type hub struct {
	client redis.UniversalClient
	ctx    context.Context // ends at close
	cancel context.CancelFunc

	mu       sync.Mutex
	ps       *redis.PubSub // nil until the first Watch
	channels map[string]*hubChannel
	closed   bool
	readerWG sync.WaitGroup
}

// hubChannel is one subscribed (or subscribing) channel and its watchers.
type hubChannel struct {
	buildID   string
	watchers  map[*buildstatus.EventQueue]struct{}
	confirmed bool         // Redis confirmed the SUBSCRIBE
	pending   bool         // a SUBSCRIBE was sent and not yet confirmed
	waiters   []chan error // Watch calls waiting for the confirmation
}

// Hub timings.
const (
	// hubPingInterval is how often the shared connection is pinged.
	hubPingInterval = 15 * time.Second
	// hubSubscribeTimeout bounds the wait for Redis to confirm a SUBSCRIBE.
	hubSubscribeTimeout = 5 * time.Second
	// hubRetryDelay is the pause after a failed receive before go-redis reconnects.
	hubRetryDelay = 100 * time.Millisecond
)

// newHub returns a hub on client; nothing is connected until the first add.
func newHub(client redis.UniversalClient) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{client: client, ctx: ctx, cancel: cancel, channels: make(map[string]*hubChannel)}
}

// add registers q as a watcher of channel and returns once Redis has confirmed the
// subscription, so every message published afterwards reaches q. Errors: EUNAVAILABLE, or
// ctx's error.
func (h *hub) add(ctx context.Context, channel, buildID string, q *buildstatus.EventQueue) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return redstate.Errorf(redstate.EUNAVAILABLE, "the store is closed")
	}
	if h.ps == nil {
		h.ps = h.client.Subscribe(h.ctx)
		h.readerWG.Add(2)
		go h.read(h.ps)
		go h.ping(h.ps)
	}
	c := h.channels[channel]
	if c == nil {
		c = &hubChannel{buildID: buildID, watchers: make(map[*buildstatus.EventQueue]struct{})}
		h.channels[channel] = c
	}
	c.watchers[q] = struct{}{}
	if c.confirmed {
		h.mu.Unlock()
		return nil
	}
	wait := make(chan error, 1)
	c.waiters = append(c.waiters, wait)
	send := !c.pending
	c.pending = true
	ps := h.ps
	h.mu.Unlock()

	if send {
		if err := ps.Subscribe(ctx, channel); err != nil {
			h.failPending(channel, err)
		}
	}
	timer := time.NewTimer(hubSubscribeTimeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-wait:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = redstate.Errorf(redstate.EUNAVAILABLE, "Redis did not confirm the subscription within %s", hubSubscribeTimeout)
	}
	if err != nil {
		h.remove(channel, q)
		return err
	}
	return nil
}

// failPending answers the waiters of channel with err after a SUBSCRIBE could not be sent.
func (h *hub) failPending(channel string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[channel]
	if c == nil {
		return
	}
	c.pending = false
	for _, w := range c.waiters {
		w <- err
	}
	c.waiters = nil
}

// remove unregisters q; the channel is unsubscribed when its last watcher leaves (or, if its
// SUBSCRIBE is still unconfirmed, when the confirmation arrives).
func (h *hub) remove(channel string, q *buildstatus.EventQueue) {
	q.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[channel]
	if c == nil {
		return
	}
	delete(c.watchers, q)
	if len(c.watchers) > 0 || c.pending {
		return
	}
	delete(h.channels, channel)
	if c.confirmed && !h.closed {
		// Best effort: a failure leaves an idle subscription that the next reconnect drops.
		go func() { _ = h.ps.Unsubscribe(h.ctx, channel) }()
	}
}

// confirmed handles Redis's confirmation of a SUBSCRIBE.
func (h *hub) confirmed(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[channel]
	if c == nil {
		return
	}
	c.confirmed, c.pending = true, false
	for _, w := range c.waiters {
		w <- nil
	}
	c.waiters = nil
	if len(c.watchers) == 0 {
		delete(h.channels, channel)
		go func() { _ = h.ps.Unsubscribe(h.ctx, channel) }()
	}
}

// deliver offers a published payload to the channel's watchers.
func (h *hub) deliver(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[channel]
	if c == nil {
		return
	}
	ev, ok := parseEvent(payload, c.buildID)
	if !ok {
		return
	}
	for q := range c.watchers {
		q.Offer(ev) // watchers only read ev.Build, so they may share it
	}
}

// gapAll tells every watcher that messages may have been lost.
func (h *hub) gapAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.channels {
		for q := range c.watchers {
			q.Offer(buildstatus.Event{Type: buildstatus.EventGap, BuildID: c.buildID})
		}
	}
}

// watchers returns how many watchers are registered (for tests and metrics).
func (h *hub) watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.channels {
		n += len(c.watchers)
	}
	return n
}

// read receives from the shared connection until the hub closes.
func (h *hub) read(ps *redis.PubSub) {
	defer h.readerWG.Done()
	for {
		msg, err := ps.Receive(h.ctx)
		if err != nil {
			if h.ctx.Err() != nil {
				return
			}
			// go-redis reconnects and resubscribes on the next receive; anything published
			// meanwhile is lost.
			h.gapAll()
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(hubRetryDelay):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirmed(m.Channel)
			}
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		}
	}
}

// ping keeps the shared connection checked until the hub closes.
func (h *hub) ping(ps *redis.PubSub) {
	defer h.readerWG.Done()
	t := time.NewTicker(hubPingInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
			_ = ps.Ping(h.ctx) // a failure surfaces as a receive error in read
		}
	}
}

// close ends every watch and closes the shared connection.
func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	ps := h.ps
	h.mu.Unlock()
	h.cancel()
	if ps != nil {
		_ = ps.Close()
	}
	h.readerWG.Wait()
}
