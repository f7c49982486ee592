package feed

import (
	"context"
	"sync"
	"time"
)

// followCacheTTL bounds how long a subscribed viewer's follow list (and the follower counts
// that make an author hybrid) is served from memory without a notification.
const followCacheTTL = time.Minute

// followCache keeps the follow lists of the viewers who are subscribed (live counts streams),
// so that their repeated UnreadCounts calls (every notification and heartbeat) make no SQL
// query until something changes. One Notifier subscription per viewer feeds it: a notification
// (a follow, unfollow, read or fan-out of the viewer, on any instance) drops the viewer's list
// before it reaches the viewer's subscribers, so their re-read sees the change. It is safe for
// concurrent use.
type followCache struct {
	notifier Notifier
	now      func() time.Time
	mu       sync.Mutex
	viewers  map[int64]*liveViewer
	gen      uint64 // the last generation handed out
}

// liveViewer is one subscribed viewer's entry.
type liveViewer struct {
	subs    map[chan struct{}]struct{}
	done    chan struct{} // closed when the last subscriber left
	gen     uint64        // changes whenever the follow list is dropped
	follows []FollowCount
	loaded  bool
	at      time.Time
}

// newFollowCache returns an empty followCache on notifier.
func newFollowCache(notifier Notifier, now func() time.Time) *followCache {
	return &followCache{notifier: notifier, now: now, viewers: map[int64]*liveViewer{}}
}

// subscribe returns a channel signalled (coalescing) when viewer's counts may have changed,
// after viewer's cached follow list was dropped, and the function ending the subscription.
func (c *followCache) subscribe(viewer int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	v := c.viewers[viewer]
	if v == nil {
		c.gen++
		v = &liveViewer{subs: map[chan struct{}]struct{}{}, done: make(chan struct{}), gen: c.gen}
		c.viewers[viewer] = v
		signal, stop := c.notifier.Subscribe(viewer)
		go c.forward(v, signal, stop)
	}
	v.subs[ch] = struct{}{}
	c.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(v.subs, ch)
			if len(v.subs) == 0 {
				delete(c.viewers, viewer)
				close(v.done)
			}
		})
	}
}

// forward drops v's follow list and signals v's subscribers on every notification, until the
// last subscriber leaves.
func (c *followCache) forward(v *liveViewer, signal <-chan struct{}, stop func()) {
	defer stop()
	for {
		select {
		case <-v.done:
			return
		case <-signal:
		}
		c.mu.Lock()
		c.drop(v)
		for ch := range v.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		c.mu.Unlock()
	}
}

// drop forgets v's follow list; a read from SQL begun before cannot store it. c.mu is held.
func (c *followCache) drop(v *liveViewer) {
	c.gen++
	v.gen, v.loaded, v.follows = c.gen, false, nil
}

// get returns viewer's cached follow list (ok) or, when there is none, the generation to pass
// to put with the list read from SQL.
func (c *followCache) get(viewer int64) (follows []FollowCount, gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.viewers[viewer]
	if v == nil {
		return nil, 0, false
	}
	if v.loaded && c.now().Sub(v.at) < followCacheTTL {
		return v.follows, v.gen, true
	}
	return nil, v.gen, false
}

// put caches follows, read from SQL after get returned gen, unless viewer is not subscribed or
// its list was dropped since.
func (c *followCache) put(viewer int64, gen uint64, follows []FollowCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.viewers[viewer]; v != nil && v.gen == gen && gen != 0 {
		v.follows, v.loaded, v.at = follows, true, c.now()
	}
}

// invalidate drops the follow lists of viewers.
func (c *followCache) invalidate(viewers ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, viewer := range viewers {
		if v := c.viewers[viewer]; v != nil {
			c.drop(v)
		}
	}
}

// notify tells users' live clients that their counts changed; a failure only delays them to
// their next heartbeat re-read. Their follow lists cached here are dropped at once (the
// notification reaches this instance's followCache asynchronously, through Redis Pub/Sub).
func (s *Service) notify(ctx context.Context, users ...int64) {
	s.follows.invalidate(users...)
	if err := s.opts.Notifier.Notify(ctx, users); err != nil {
		s.log.Debug("feed: notification failed", "err", err)
	}
}

// Subscribe returns a channel signalled when viewer's unread counts may have changed, and the
// function that ends the subscription. While viewer is subscribed, UnreadCounts keeps viewer's
// follow list in memory (dropped on every notification of viewer, kept at most followCacheTTL),
// so a live stream's re-reads make no SQL query until something changes.
func (s *Service) Subscribe(viewer int64) (<-chan struct{}, func()) {
	return s.follows.subscribe(viewer)
}
