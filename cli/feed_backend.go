package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/internal/metrics"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// feedBackend is the feed block as serve runs it: SQL source, Redis (or memory) cache, and a
// worker of the fan-out queue.
type feedBackend struct {
	svc    *feed.Service
	worker *queue.Worker
	// notifier carries count notifications across instances (nil without Redis).
	notifier *redisfeed.Notifier
	close    func() error
}

// openFeedBackend builds the feed on db (its truth) and broker (durable fan-out jobs, reported to
// observer); nil service when feed.enabled is false.
func openFeedBackend(ctx context.Context, cfg config.Config, db *sqldb.DB, broker queue.Broker, observer queue.Observer, m *metrics.Metrics, log *slog.Logger) (*feedBackend, error) {
	fb := &feedBackend{close: func() error { return nil }}
	if !cfg.Feed.Enabled {
		return fb, nil
	}
	src, err := sqlfeed.New(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	var cache feed.Cache = memfeed.New()
	backend := backendMemory
	var breaker *resilience.Breaker
	if cfg.Redis.Configured() {
		b := cfg.Feed.Breaker
		if breaker, err = resilience.NewBreaker(feed.Block, config.Resilience{FailureRateThreshold: b.FailureRateThreshold,
			WaitDurationInOpenState: b.WaitDurationInOpenState, SlidingWindowSize: b.SlidingWindowSize}, m, log); err != nil {
			return nil, fmt.Errorf("feed breaker: %w", err)
		}
		client, err := redisconn.New(cfg.Redis)
		if err != nil {
			return nil, err
		}
		fb.close = client.Close
		cache, backend = redisfeed.New(client, cfg.Namespace+cfg.Feed.Prefix), backendRedis
		fb.notifier = redisfeed.NewNotifier(client, cfg.Namespace+cfg.Feed.Prefix, log)
	}
	var notifier feed.Notifier
	if fb.notifier != nil {
		notifier = fb.notifier
	}
	enqueue, err := feed.FanOutEnqueuer(broker, cfg.Feed.FanOutQueue)
	if err != nil {
		_ = fb.close()
		return nil, fmt.Errorf("feed fan-out queue: %w", err)
	}
	svc, err := feed.NewService(src, cache, feed.Options{HybridThreshold: cfg.Feed.HybridThreshold, Logger: log, Notifier: notifier,
		Breaker: breaker, RepairInterval: cfg.Feed.RepairInterval, Enqueue: enqueue})
	if err != nil {
		_ = fb.close()
		return nil, err
	}
	w, err := queue.NewWorker(broker, feed.FanOutHandler(svc), queue.Config{Queue: cfg.Feed.FanOutQueue, Concurrency: cfg.Feed.FanOutConcurrency,
		ShutdownTimeout: cfg.Server.ShutdownTimeout, Logger: log, Observer: observer, Check: feed.CheckFanOutJob})
	if err != nil {
		_ = fb.close()
		return nil, fmt.Errorf("feed fan-out worker: %w", err)
	}
	fb.svc, fb.worker = svc, w
	log.Info("feed ready", "backend", backend, "hybrid_threshold", cfg.Feed.HybridThreshold, "fanout_queue", cfg.Feed.FanOutQueue)
	return fb, nil
}

// start runs the fan-out worker until ctx ends; wait blocks until it returned.
func (fb *feedBackend) start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	if fb.worker != nil {
		wg.Go(func() { _ = fb.worker.Run(ctx) })
		wg.Go(func() { _ = fb.svc.Run(ctx) })
	}
	if fb.notifier != nil {
		wg.Go(func() { _ = fb.notifier.Run(ctx) })
	}
	return wg.Wait
}
