package feed

import (
	"context"
	"time"

	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

// BreakerState returns the state of the breaker in front of the cache ("closed", "half-open",
// "open"), or "" when the Service has none (Options.Breaker nil).
func (s *Service) BreakerState() string {
	if s.opts.Breaker == nil {
		return ""
	}
	return s.opts.Breaker.State()
}

// degraded logs a read answered from SQL: at Warn, or at Debug while the breaker is open (its
// transition was logged at Warn; one line per request would flood the log).
func (s *Service) degraded(msg string, err error) {
	if s.opts.Breaker != nil && s.opts.Breaker.State() == metrics.BreakerOpen {
		s.log.Debug(msg, "err", err)
		return
	}
	s.log.Warn(msg, "err", err)
}

// maxProbes bounds the pings of one probe.
const maxProbes = 64

// probe checks that Redis answers: one ping, or while the breaker is not closed, pings until it
// closes (each one of its trial calls) or a ping fails. Errors: EUNAVAILABLE.
func (s *Service) probe(ctx context.Context) error {
	for range maxProbes {
		if err := s.cache.Ping(ctx); err != nil {
			return err
		}
		if s.opts.Breaker == nil || s.opts.Breaker.State() == metrics.BreakerClosed {
			return nil
		}
	}
	return s.cache.Ping(ctx)
}

// breakerCache is a Cache whose every call goes through a circuit breaker: while it is open,
// calls fail at once with EUNAVAILABLE (so a degraded read goes to SQL at SQL speed instead of
// waiting for Redis to fail), and Service.Run's ping probes Redis until it closes.
type breakerCache struct {
	c  Cache
	br *resilience.Breaker
}

var _ Cache = breakerCache{}

// guarded runs fn through the breaker.
func guarded[T any](ctx context.Context, b breakerCache, fn func() (T, error)) (T, error) {
	var out T
	err := guardedErr(ctx, b, func() error {
		var err error
		out, err = fn()
		return err
	})
	return out, err
}

// guardedErr runs fn through the breaker. While it is not closed, requests fail at once and
// never serve as its trial calls (they would wait for a Redis that may still be down):
// Service.probe's pings, in the background, half-open and close it.
func guardedErr(ctx context.Context, b breakerCache, fn func() error) error {
	return b.br.DoIfClosed(ctx, fn)
}

// PutPosts implements Cache.
func (b breakerCache) PutPosts(ctx context.Context, posts []Post) error {
	return guardedErr(ctx, b, func() error { return b.c.PutPosts(ctx, posts) })
}

// GetPosts implements Cache.
func (b breakerCache) GetPosts(ctx context.Context, ids []int64) (map[int64]Post, error) {
	return guarded(ctx, b, func() (map[int64]Post, error) { return b.c.GetPosts(ctx, ids) })
}

// DeletePosts implements Cache.
func (b breakerCache) DeletePosts(ctx context.Context, ids []int64) error {
	return guardedErr(ctx, b, func() error { return b.c.DeletePosts(ctx, ids) })
}

// Ping implements Cache: the breaker's trial call, also while it is half-open.
func (b breakerCache) Ping(ctx context.Context) error {
	return b.br.Do(ctx, func() error { return b.c.Ping(ctx) })
}

// PublishPost implements Cache.
func (b breakerCache) PublishPost(ctx context.Context, post Post) (bool, error) {
	return guarded(ctx, b, func() (bool, error) { return b.c.PublishPost(ctx, post) })
}

// AddAuthorPost implements Cache.
func (b breakerCache) AddAuthorPost(ctx context.Context, author int64, ref PostRef) error {
	return guardedErr(ctx, b, func() error { return b.c.AddAuthorPost(ctx, author, ref) })
}

// HasAuthorIndex implements Cache.
func (b breakerCache) HasAuthorIndex(ctx context.Context, author int64) (bool, error) {
	return guarded(ctx, b, func() (bool, error) { return b.c.HasAuthorIndex(ctx, author) })
}

// SetAuthorIndex implements Cache.
func (b breakerCache) SetAuthorIndex(ctx context.Context, author int64, refs []PostRef) error {
	return guardedErr(ctx, b, func() error { return b.c.SetAuthorIndex(ctx, author, refs) })
}

// AuthorPage implements Cache.
func (b breakerCache) AuthorPage(ctx context.Context, author int64, after Cursor, limit int) ([]PostRef, error) {
	return guarded(ctx, b, func() ([]PostRef, error) { return b.c.AuthorPage(ctx, author, after, limit) })
}

// FanOut implements Cache.
func (b breakerCache) FanOut(ctx context.Context, author int64, ref PostRef, followers []int64) (int, error) {
	return guarded(ctx, b, func() (int, error) { return b.c.FanOut(ctx, author, ref, followers) })
}

// MarkRead implements Cache.
func (b breakerCache) MarkRead(ctx context.Context, user, author, post int64) (bool, error) {
	return guarded(ctx, b, func() (bool, error) { return b.c.MarkRead(ctx, user, author, post) })
}

// MarkAuthorRead implements Cache.
func (b breakerCache) MarkAuthorRead(ctx context.Context, user, author int64, posts []int64) (int, error) {
	return guarded(ctx, b, func() (int, error) { return b.c.MarkAuthorRead(ctx, user, author, posts) })
}

// Unfollow implements Cache.
func (b breakerCache) Unfollow(ctx context.Context, user, author int64) error {
	return guardedErr(ctx, b, func() error { return b.c.Unfollow(ctx, user, author) })
}

// Built implements Cache.
func (b breakerCache) Built(ctx context.Context, user int64) (bool, error) {
	return guarded(ctx, b, func() (bool, error) { return b.c.Built(ctx, user) })
}

// Rebuild implements Cache.
func (b breakerCache) Rebuild(ctx context.Context, user int64, st UserState) error {
	return guardedErr(ctx, b, func() error { return b.c.Rebuild(ctx, user, st) })
}

// UnreadPage implements Cache.
func (b breakerCache) UnreadPage(ctx context.Context, user, author int64, after Cursor, limit int) ([]PostRef, error) {
	return guarded(ctx, b, func() ([]PostRef, error) { return b.c.UnreadPage(ctx, user, author, after, limit) })
}

// UnreadCounts implements Cache.
func (b breakerCache) UnreadCounts(ctx context.Context, user int64, authors []int64) (map[int64]int64, error) {
	return guarded(ctx, b, func() (map[int64]int64, error) { return b.c.UnreadCounts(ctx, user, authors) })
}

// ReadOf implements Cache.
func (b breakerCache) ReadOf(ctx context.Context, user, author int64, posts []int64) (map[int64]bool, error) {
	return guarded(ctx, b, func() (map[int64]bool, error) { return b.c.ReadOf(ctx, user, author, posts) })
}

// AddRead implements Cache.
func (b breakerCache) AddRead(ctx context.Context, user int64, posts []int64) error {
	return guardedErr(ctx, b, func() error { return b.c.AddRead(ctx, user, posts) })
}

// HybridUnread implements Cache.
func (b breakerCache) HybridUnread(ctx context.Context, user, author int64, since time.Time, after Cursor, limit int) (int64, []PostRef, error) {
	var n int64
	page, err := guarded(ctx, b, func() ([]PostRef, error) {
		var err error
		var p []PostRef
		n, p, err = b.c.HybridUnread(ctx, user, author, since, after, limit)
		return p, err
	})
	return n, page, err
}

// HybridCounts implements Cache.
func (b breakerCache) HybridCounts(ctx context.Context, user int64, since map[int64]time.Time) (map[int64]int64, []int64, error) {
	var missing []int64
	counts, err := guarded(ctx, b, func() (map[int64]int64, error) {
		var err error
		var counts map[int64]int64
		counts, missing, err = b.c.HybridCounts(ctx, user, since)
		return counts, err
	})
	return counts, missing, err
}

// breakerNotifier sends notifications through the breaker: while it is open, writes do not wait
// for Redis to fail only to notify (a lost notification delays a live count to its heartbeat).
type breakerNotifier struct {
	Notifier
	br *resilience.Breaker
}

// Notify implements Notifier.
func (b breakerNotifier) Notify(ctx context.Context, users []int64) error {
	return b.br.Do(ctx, func() error { return b.Notifier.Notify(ctx, users) })
}
