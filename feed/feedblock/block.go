// Package feedblock opens the feed as a running block: its SQL source (the truth), the Redis
// (or memory) cache, a worker of the fan-out queue, and the notifier that carries count changes
// across instances.
package feedblock

import (
	"context"
	"fmt"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redisconn"
)

// Name is the block's name in Health, logs and the overview.
const Name = "feed"

// Queues is what the feed needs of the queue block: the broker its fan-out jobs ride (durable,
// shown by the queue admin) and the observer its fan-out worker reports to.
type Queues interface {
	// Broker is the broker the fan-out jobs are enqueued on.
	Broker() queue.Broker
	// Observer receives the fan-out worker's handled jobs.
	Observer() queue.Observer
	// AddAdmin shows the fan-out queue in the API, the dashboard and the queue metrics.
	AddAdmin(name string) error
}

// Block is the feed as a component.
type Block struct {
	svc    *feed.Service
	worker *queue.Worker
	// notifier carries count notifications across instances (nil without Redis).
	notifier *redisfeed.Notifier
	// backend names the cache and the SQL engine, for the overview.
	backend string
	reach   *redisconn.Reachability
	// breaker guards the feed's Redis calls (nil without Redis); Close stops its probe.
	breaker *resilience.Breaker
	bg      component.Background
}

// RedisCache is the feed's Redis side on env's client under env.Namespace + cfg.Prefix, its
// unread pages read through env's client-side cache when there is one.
func RedisCache(env component.Env, cfg feed.Config) *redisfeed.Cache {
	prefix := redstate.Prefix(env.Namespace, cfg.KeyPrefix)
	if env.Cache != nil {
		return redisfeed.NewCached(env.Redis, prefix, env.Cache)
	}
	return redisfeed.New(env.Redis, prefix)
}

// Open builds the feed from cfg (the feed section) on env's SQL pool (its truth) and the queue
// block's broker (durable fan-out jobs); a block with no service when feed.enabled is false.
// Errors: the SQL pool's, the source's, the breaker's and the service's construction errors.
func Open(ctx context.Context, env component.Env, cfg feed.Config, queues Queues) (_ *Block, err error) {
	log := env.Logger()
	fb := &Block{}
	defer func() {
		if err != nil && fb.breaker != nil {
			fb.breaker.Close()
		}
	}()
	if !cfg.Enabled {
		return fb, nil
	}
	db, err := env.DB(ctx)
	if err != nil {
		return nil, err
	}
	if err := queues.AddAdmin(cfg.FanOutQueue); err != nil {
		return nil, err
	}
	broker := queues.Broker()
	src, err := sqlfeed.Open(ctx, db, cfg.SQL)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	var cache feed.Cache = memfeed.New()
	backend := component.BackendMemory
	if env.Redis != nil {
		var probe []resilience.BreakerOption
		if env.BreakerProbe != nil {
			probe = append(probe, resilience.WithProbe(env.BreakerProbe))
		}
		if fb.breaker, err = resilience.NewBreaker(feed.Block, cfg.Resilience.Options(), env.Metrics, log, probe...); err != nil {
			return nil, fmt.Errorf("feed breaker: %w", err)
		}
		cache, backend = RedisCache(env, cfg), component.BackendRedis
		fb.notifier = redisfeed.NewNotifier(env.Redis, redstate.Prefix(env.Namespace, cfg.KeyPrefix), log)
	}
	var notifier feed.Notifier
	if fb.notifier != nil {
		notifier = fb.notifier
	}
	enqueue, err := feed.FanOutEnqueuer(broker, cfg.FanOutQueue)
	if err != nil {
		return nil, fmt.Errorf("feed fan-out queue: %w", err)
	}
	enqueue = countPublished(env.History, enqueue)
	svc, err := feed.NewService(src, cache, feed.Options{HybridThreshold: cfg.HybridThreshold, Logger: log, Notifier: notifier,
		Breaker: fb.breaker, RepairInterval: cfg.RepairInterval, Enqueue: enqueue})
	if err != nil {
		return nil, err
	}
	sampleBacklog(env.History, broker, cfg.FanOutQueue)
	w, err := queue.NewWorker(broker, deliveryLag(env.History, feed.FanOutHandler(svc)), queue.WorkerSettings{Queue: cfg.FanOutQueue, Concurrency: cfg.FanOutConcurrency,
		ShutdownTimeout: env.Shutdown(), Logger: log, Observer: queues.Observer(), Check: feed.CheckFanOutJob})
	if err != nil {
		return nil, fmt.Errorf("feed fan-out worker: %w", err)
	}
	fb.svc, fb.worker, fb.reach = svc, w, env.Reachability
	fb.backend = backend + " + sql (" + db.Dialect.String() + ")"
	log.Info("feed ready", "backend", backend, "hybrid_threshold", cfg.HybridThreshold, "fanout_queue", cfg.FanOutQueue)
	return fb, nil
}

// Service is the feed's service, or nil when feed.enabled is false.
func (fb *Block) Service() *feed.Service { return fb.svc }

// Name is "feed".
func (fb *Block) Name() string { return Name }

// Start runs the fan-out worker, the repair loop and the cross-instance notifier until ctx
// ends or Close. An interrupted fan-out is redelivered (harmless: counts move only when sets
// change).
func (fb *Block) Start(ctx context.Context) error {
	if fb.worker != nil {
		fb.bg.Go(ctx, func(ctx context.Context) { _ = fb.worker.Run(ctx) })
		fb.bg.Go(ctx, func(ctx context.Context) { _ = fb.svc.Run(ctx) })
	}
	if fb.notifier != nil {
		fb.bg.Go(ctx, func(ctx context.Context) { _ = fb.notifier.Run(ctx) })
	}
	return nil
}

// Close stops the worker (running fan-outs finish within the shutdown timeout), the loops
// and the breaker's probe.
func (fb *Block) Close(ctx context.Context) error {
	err := fb.bg.Stop(ctx)
	if fb.breaker != nil {
		fb.breaker.Close()
	}
	return err
}

// Health reports the cache backend and the breaker: open, or Redis not answering, means reads
// come from SQL.
func (fb *Block) Health(ctx context.Context) component.Status {
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
	if fb.reach != nil && st.State == component.StateOK {
		if _, err := fb.reach.Check(ctx); err != nil {
			st.State, st.Detail = component.StateDegraded, "Redis does not answer: reads come from SQL"
		}
	}
	return st
}
