package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/memstate"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/internal/metrics"
	"github.com/redstate/redstate/redisconn"
)

// executorBackend is the stage executor (seed 002) as serve runs it: the runner on the
// memory or Redis state store, with one webhook stage handler per executor.handlers entry.
type executorBackend struct {
	// name is backendMemory or backendRedis.
	name     string
	degraded bool
	runner   *executor.Runner
	log      *slog.Logger
	closers  []func() error
}

// executorStartupPing bounds the startup check of Redis.
const executorStartupPing = 3 * time.Second

// openExecutorBackend builds the executor from cfg.Executor. With store-type redis (or Redis
// configured and no store type) it pings Redis: unreachable means degrade to memory with a
// loud error log and redstate_executor_degraded=1 (on-redis-unavailable: memory), or an error
// (fail).
func openExecutorBackend(ctx context.Context, cfg config.Config, m *metrics.Metrics, log *slog.Logger) (*executorBackend, error) {
	ec := cfg.Executor
	pc := ec.Persistence.Redis.WithDefaults()
	eb := &executorBackend{log: log}
	em := metrics.NewExecutorMetrics(m)
	useRedis := ec.Persistence.StoreType == config.ExecutorStoreRedis ||
		(ec.Persistence.StoreType == "" && cfg.Redis.Configured())
	var stores executor.Stores
	var client redis.UniversalClient
	if useRedis {
		var err error
		client, err = redisconn.New(cfg.Redis)
		if err != nil {
			return nil, err
		}
		eb.closers = append(eb.closers, client.Close)
		pctx, cancel := context.WithTimeout(ctx, executorStartupPing)
		err = redisconn.Ping(pctx, client)
		cancel()
		if err != nil {
			if ec.Persistence.OnRedisUnavailable == config.ExecutorFail {
				_ = eb.Close()
				return nil, fmt.Errorf("executor: Redis is unreachable at startup and executor.persistence.on-redis-unavailable is fail: %w", err)
			}
			log.Error("EXECUTOR DEGRADED TO MEMORY: Redis is unreachable at startup; the stage executor keeps checkpoints, projections and tenant locks in this process only (lost on restart, not shared with other instances). Restart once Redis is back.",
				"redis", redisconn.Describe(cfg.Redis), "error", err)
			_ = eb.Close()
			useRedis, eb.degraded = false, true
			em.SetDegraded(true)
		}
	}
	if useRedis {
		keys, err := executor.NewKeys(pc.Namespace)
		if err != nil {
			_ = eb.Close()
			return nil, err
		}
		o := func(ttl time.Duration) redisstate.Options { return redisstate.Options{Keys: keys, TTL: ttl} }
		ck, err1 := redisstate.NewCheckpoints(client, o(pc.TTL.Checkpoint))
		pr, err2 := redisstate.NewProjections(client, o(pc.TTL.Projection))
		ix, err3 := redisstate.NewTenantIndex(client, o(pc.TTL.Projection))
		lk, err4 := redisstate.NewLocks(client, o(0))
		rg, err5 := redisstate.NewRegistry(client, o(pc.TTL.Projection))
		in, err6 := redisstate.NewInspector(client, o(0))
		if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
			_ = eb.Close()
			return nil, err
		}
		stores = executor.Stores{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg, Inspector: in}
		eb.name = backendRedis
	} else {
		ck := memstate.NewCheckpoints(memstate.Options{TTL: pc.TTL.Checkpoint})
		pr := memstate.NewProjections(memstate.Options{TTL: pc.TTL.Projection})
		ix := memstate.NewTenantIndex(memstate.Options{TTL: pc.TTL.Projection})
		lk := memstate.NewLocks(memstate.Options{})
		rg := memstate.NewRegistry(memstate.Options{TTL: pc.TTL.Projection})
		stores = executor.Stores{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg,
			Inspector: memstate.Inspector{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg}}
		eb.name = backendMemory
	}
	r, err := executor.New(executor.Options{
		Stores:             stores,
		LockTTL:            pc.TTL.Lock,
		HeartbeatInterval:  ec.HeartbeatInterval,
		OrphanScanInterval: ec.OrphanScanInterval,
		StatsInterval:      ec.MetricsInterval,
		ShutdownTimeout:    cfg.Server.ShutdownTimeout,
		Observer:           em,
		Logger:             log,
	})
	if err != nil {
		_ = eb.Close()
		return nil, err
	}
	for _, h := range ec.Handlers {
		r.Handle(h.Name, executor.WebhookHandler(h.URL, h.Timeout, nil))
	}
	eb.runner = r
	log.Info("stage executor ready", "backend", eb.name, "degraded", eb.degraded, "namespace", pc.Namespace,
		"lock_ttl", pc.TTL.Lock.String(), "handlers", len(ec.Handlers))
	return eb, nil
}

// start runs the executor (orphan scan, metrics pass) until ctx ends; wait blocks until its
// running stages finished (within server.shutdown-timeout) and every task goroutine returned.
func (eb *executorBackend) start(ctx context.Context) (wait func()) {
	done := make(chan struct{})
	go func() { _ = eb.runner.Run(ctx); close(done) }()
	return func() { <-done }
}

// Close releases the Redis client, if any.
func (eb *executorBackend) Close() error {
	var errs []error
	for _, c := range eb.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	eb.closers = nil
	return errors.Join(errs...)
}
