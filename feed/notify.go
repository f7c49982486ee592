package feed

import (
	"context"
	"sync"
)

// Notifier tells a user's live clients that the user's unread counts may have changed (on
// publish and on read), across server instances when backed by Redis
// (redisfeed.Notifier). Notifications carry no data: a client re-reads the counts, so a lost
// or coalesced notification never leaves it wrong for long.
type Notifier interface {
	// Notify signals users. Errors: EUNAVAILABLE.
	Notify(ctx context.Context, users []int64) error
	// Subscribe returns a channel signalled when user is notified (signals coalesce: the
	// channel holds at most one) and a function that ends the subscription.
	Subscribe(user int64) (<-chan struct{}, func())
}

// LocalNotifier is the in-process Notifier: the embedded default, and the dispatcher of
// redisfeed.Notifier. It is safe for concurrent use.
type LocalNotifier struct {
	mu   sync.Mutex
	subs map[int64]map[chan struct{}]struct{}
}

var _ Notifier = (*LocalNotifier)(nil)

// NewLocalNotifier returns a LocalNotifier.
func NewLocalNotifier() *LocalNotifier {
	return &LocalNotifier{subs: map[int64]map[chan struct{}]struct{}{}}
}

// Notify implements Notifier; it never blocks.
func (n *LocalNotifier) Notify(_ context.Context, users []int64) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, u := range users {
		for ch := range n.subs[u] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// NotifyAll signals every subscriber (after notifications may have been lost).
func (n *LocalNotifier) NotifyAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, set := range n.subs {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// Subscribe implements Notifier.
func (n *LocalNotifier) Subscribe(user int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs[user] == nil {
		n.subs[user] = map[chan struct{}]struct{}{}
	}
	n.subs[user][ch] = struct{}{}
	n.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.subs[user], ch)
			if len(n.subs[user]) == 0 {
				delete(n.subs, user)
			}
			n.mu.Unlock()
		})
	}
}
