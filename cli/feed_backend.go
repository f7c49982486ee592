package cli

import (
	"context"
	"fmt"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/queue"
)

// feedBackend is the feed block as serve runs it: SQL source, Redis (or memory) cache, and a
// worker of the fan-out queue.
type feedBackend struct {
	svc    *feed.Service
	worker *queue.Worker
	// notifier carries count notifications across instances (nil without Redis).
	notifier *redisfeed.Notifier
	// backend names the cache and the SQL engine, for the overview.
	backend string
	probe   *redisProbe
	// breaker guards the feed's Redis calls (nil without Redis); Close stops its probe.
	breaker *resilience.Breaker
	bg      component.Background
}

// redisFeed is the feed's Redis side on the root's client, its unread pages read through the
// client-side cache when redis.client-cache is on.
func (a *app) redisFeed() *redisfeed.Cache {
	prefix := a.keyPrefix(a.cfg.Feed.Prefix)
	if a.cache != nil {
		return redisfeed.NewCached(a.redis, prefix, a.cache)
	}
	return redisfeed.New(a.redis, prefix)
}

// feed builds the feed on the root's SQL pool (its truth) and the queue component's broker
// (durable fan-out jobs, shown by the queue admin); nil service when feed.enabled is false.
func (a *app) feed(ctx context.Context, queues *queueBackend) (*feedBackend, error) {
	fb, err := a.openFeed(ctx, queues)
	if err != nil {
		return nil, err
	}
	a.add(fb)
	return fb, nil
}

// openFeed builds the feed component (see feed) without registering it.
func (a *app) openFeed(ctx context.Context, queues *queueBackend) (_ *feedBackend, err error) {
	cfg, m, log := a.cfg, a.metrics, a.log
	fb := &feedBackend{}
	defer func() {
		if err != nil && fb.breaker != nil {
			fb.breaker.Close()
		}
	}()
	if !cfg.Feed.Enabled {
		return fb, nil
	}
	db, err := a.sql(ctx)
	if err != nil {
		return nil, err
	}
	if err := queues.addAdmin(cfg.Feed.FanOutQueue); err != nil {
		return nil, err
	}
	broker := queues.broker
	src, err := sqlfeed.Open(ctx, db, cfg.Feed.SQL)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	var cache feed.Cache = memfeed.New()
	backend := backendMemory
	if a.redis != nil {
		if fb.breaker, err = resilience.NewBreaker(feed.Block, cfg.Feed.Breaker.Options(), m, log, a.breakerProbe()); err != nil {
			return nil, fmt.Errorf("feed breaker: %w", err)
		}
		client := a.redis
		cache, backend = a.redisFeed(), backendRedis
		fb.notifier = redisfeed.NewNotifier(client, cfg.Namespace+cfg.Feed.Prefix, log)
	}
	var notifier feed.Notifier
	if fb.notifier != nil {
		notifier = fb.notifier
	}
	enqueue, err := feed.FanOutEnqueuer(broker, cfg.Feed.FanOutQueue)
	if err != nil {
		return nil, fmt.Errorf("feed fan-out queue: %w", err)
	}
	svc, err := feed.NewService(src, cache, feed.Options{HybridThreshold: cfg.Feed.HybridThreshold, Logger: log, Notifier: notifier,
		Breaker: fb.breaker, RepairInterval: cfg.Feed.RepairInterval, Enqueue: enqueue})
	if err != nil {
		return nil, err
	}
	w, err := queue.NewWorker(broker, feed.FanOutHandler(svc), queue.Config{Queue: cfg.Feed.FanOutQueue, Concurrency: cfg.Feed.FanOutConcurrency,
		ShutdownTimeout: cfg.Server.ShutdownTimeout, Logger: log, Observer: queues.observer, Check: feed.CheckFanOutJob})
	if err != nil {
		return nil, fmt.Errorf("feed fan-out worker: %w", err)
	}
	fb.svc, fb.worker, fb.probe = svc, w, a.probe
	fb.backend = backend + " + sql (" + db.Dialect.String() + ")"
	log.Info("feed ready", "backend", backend, "hybrid_threshold", cfg.Feed.HybridThreshold, "fanout_queue", cfg.Feed.FanOutQueue)
	return fb, nil
}

// Name is "feed".
func (fb *feedBackend) Name() string { return "feed" }

// Start runs the fan-out worker, the repair loop and the cross-instance notifier until ctx
// ends or Close. An interrupted fan-out is redelivered (harmless: counts move only when sets
// change).
func (fb *feedBackend) Start(ctx context.Context) error {
	if fb.worker != nil {
		fb.bg.Go(ctx, func(ctx context.Context) { _ = fb.worker.Run(ctx) })
		fb.bg.Go(ctx, func(ctx context.Context) { _ = fb.svc.Run(ctx) })
	}
	if fb.notifier != nil {
		fb.bg.Go(ctx, func(ctx context.Context) { _ = fb.notifier.Run(ctx) })
	}
	return nil
}

// Close stops the worker (running fan-outs finish within server.shutdown-timeout), the loops
// and the breaker's probe.
func (fb *feedBackend) Close(ctx context.Context) error {
	err := fb.bg.Stop(ctx)
	if fb.breaker != nil {
		fb.breaker.Close()
	}
	return err
}

// Health reports the cache backend and the breaker: open, or Redis not answering, means reads
// come from SQL.
func (fb *feedBackend) Health(ctx context.Context) component.Status {
	st := component.Status{Name: fb.Name(), Backend: fb.backend, State: component.StateOK}
	if fb.svc == nil {
		st.State = component.StateOff
		return st
	}
	if bs := fb.svc.BreakerState(); bs != "" {
		st.Detail = "breaker " + bs
		if bs != "closed" {
			st.State, st.Detail = component.StateDegraded, "breaker "+bs+": reads come from SQL, missed writes are repaired when Redis answers"
		}
	}
	if fb.probe != nil && st.State == component.StateOK {
		if _, err := fb.probe.check(ctx); err != nil {
			st.State, st.Detail = component.StateDegraded, "Redis does not answer: reads come from SQL"
		}
	}
	return st
}
