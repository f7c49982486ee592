package feed

import (
	"context"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/resilience"
)

// Read statuses of Page (the seed's readStatus).
const (
	StatusAll    = "ALL"
	StatusUnread = "UNREAD"
)

// Defaults of Options.
const (
	// DefaultHybridThreshold is the follower count above which an author is not fanned out to
	// (the seed's "big V"): unread is computed on read instead.
	DefaultHybridThreshold = 10000
	// DefaultFanOutBatch is how many followers one fan-out pipeline covers.
	DefaultFanOutBatch = 1000
	// MaxPageSize bounds a page.
	MaxPageSize = 100
)

// Options configure a Service. Zero fields take the defaults stated on them.
type Options struct {
	// HybridThreshold: authors with more followers are hybrid (no fan-out). Default 10,000;
	// negative: every author is hybrid.
	HybridThreshold int64
	// FanOutBatch is the followers per fan-out pipeline. Default 1,000.
	FanOutBatch int
	// Enqueue, if set, schedules the fan-out of a post durably (the queue block; its handler
	// calls FanOutPost). Nil: Publish fans out before returning.
	Enqueue func(ctx context.Context, post int64) error
	// Notifier tells live clients their counts changed. Default: a LocalNotifier.
	Notifier Notifier
	// Logger receives cache failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Breaker, if set, guards every cache call and notification: while it is open they fail at
	// once and reads are answered from SQL; Run's ping probes Redis until it closes.
	Breaker *resilience.Breaker
	// RepairInterval is how often Run repairs what the repair marks name. Default
	// DefaultRepairInterval.
	RepairInterval time.Duration
}

// Service is the feed: publish (saveBlog), mark read (markBlogAsRead), pages by read status
// (queryUserBlogByReadStatus), follow, like and unread counts. SQL is the source of truth; every
// read is answered from Redis when it can and from SQL when it cannot. It is safe for concurrent
// use.
type Service struct {
	src   Source
	cache Cache
	opts  Options
	log   *slog.Logger
	// follows keeps the follow lists of subscribed viewers (live counts streams).
	follows *followCache
}

// NewService returns a Service. Errors: EINVALID (nil source or cache).
func NewService(src Source, cache Cache, opts Options) (*Service, error) {
	if src == nil || cache == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "feed: a source and a cache are required")
	}
	if opts.HybridThreshold == 0 {
		opts.HybridThreshold = DefaultHybridThreshold
	}
	if opts.FanOutBatch <= 0 {
		opts.FanOutBatch = DefaultFanOutBatch
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Notifier == nil {
		opts.Notifier = NewLocalNotifier()
	}
	if opts.RepairInterval <= 0 {
		opts.RepairInterval = DefaultRepairInterval
	}
	if opts.Breaker != nil {
		cache = breakerCache{c: cache, br: opts.Breaker}
		opts.Notifier = breakerNotifier{Notifier: opts.Notifier, br: opts.Breaker}
	}
	return &Service{src: src, cache: cache, opts: opts, log: opts.Logger.With("block", "feed"),
		follows: newFollowCache(opts.Notifier, opts.Now)}, nil
}

// now is the clock at millisecond precision: the precision of Redis scores, so that cursors
// from Redis and from SQL agree.
func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Millisecond) }
