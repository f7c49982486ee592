package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/memstate"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/internal/metrics"
	"github.com/redstate/redstate/redisconn"
)

// executorBackend is the stage executor (seed 002) as serve runs it: the runner on the
// memory or Redis state store, with one webhook stage handler per executor.handlers entry.
//
// When Redis is the executor's store and unreachable at startup, with
// on-redis-unavailable: memory the executor starts degraded: it has no runner and refuses work
// (503) instead of keeping tenant locks in this process, where two instances could run one
// tenant at once. It retries Redis every executorReconnectInterval and, once Redis answers,
// builds the Redis runner and serves normally (degraded gauge back to 0, /readyz ready).
type executorBackend struct {
	// name is backendMemory or backendRedis.
	name    string
	current atomic.Pointer[executor.Runner]  // nil while degraded
	since   time.Time                        // start of the degraded period
	connect func() (*executor.Runner, error) // builds the Redis runner (degraded start only)
	metrics *metrics.ExecutorMetrics
	log     *slog.Logger
	client  redis.UniversalClient // the root's client; nil without Redis
	// cfg is what the runner and lister are built from.
	cfg  config.Config
	done chan struct{} // closed when the started executor returned; nil before Start
	stop context.CancelFunc
}

// Executor backend timings.
const (
	// executorStartupPing bounds the startup check of Redis.
	executorStartupPing = 3 * time.Second
	// executorReconnectInterval is how often a degraded executor retries Redis.
	executorReconnectInterval = time.Second
)

// executor builds the executor from cfg.Executor. With store-type redis (or Redis configured
// and no store type) it pings the root's Redis: unreachable means start degraded (see
// executorBackend; on-redis-unavailable: memory) or an error (fail).
func (a *app) executor(ctx context.Context) (*executorBackend, error) {
	eb, err := a.openExecutor(ctx)
	if err != nil {
		return nil, err
	}
	a.add(eb)
	return eb, nil
}

// openExecutor builds the executor component (see executor) without registering it.
func (a *app) openExecutor(ctx context.Context) (*executorBackend, error) {
	cfg, m, log := a.cfg, a.metrics, a.log
	ec := cfg.Executor
	pc := ec.Persistence.Redis.WithDefaults()
	eb := &executorBackend{log: log, metrics: metrics.NewExecutorMetrics(m), cfg: cfg}
	useRedis := ec.Persistence.StoreType == executor.StoreRedis ||
		(ec.Persistence.StoreType == "" && a.redis != nil)
	if !useRedis {
		ck := memstate.NewCheckpoints(memstate.Options{TTL: pc.TTL.Checkpoint})
		pr := memstate.NewProjections(memstate.Options{TTL: pc.TTL.Projection})
		ix := memstate.NewTenantIndex(memstate.Options{TTL: pc.TTL.Projection})
		lk := memstate.NewLocks(memstate.Options{})
		rg := memstate.NewRegistry(memstate.Options{TTL: pc.TTL.Projection})
		stores := executor.Stores{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg,
			Inspector: memstate.Inspector{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg}}
		eb.name = backendMemory
		r, err := eb.newRunner(cfg, stores)
		if err != nil {
			return nil, err
		}
		eb.current.Store(r)
		eb.logReady(pc)
		return eb, nil
	}

	client, err := a.requireRedis()
	if err != nil {
		return nil, fmt.Errorf("executor.persistence.store-type redis: %w", err)
	}
	eb.client = client
	eb.name = backendRedis
	eb.connect = func() (*executor.Runner, error) {
		stores, err := redisExecutorStores(client, cfg)
		if err != nil {
			return nil, err
		}
		return eb.newRunner(cfg, stores)
	}
	pctx, cancel := context.WithTimeout(ctx, executorStartupPing)
	err = redisconn.Ping(pctx, client)
	cancel()
	if err != nil {
		if ec.Persistence.OnRedisUnavailable == executor.OnUnavailableFail {
			return nil, fmt.Errorf("executor: Redis is unreachable at startup and executor.persistence.on-redis-unavailable is fail: %w", err)
		}
		log.Error("EXECUTOR DEGRADED: Redis is unreachable at startup; the stage executor refuses work (503) until Redis answers, then starts on Redis. "+
			"It does not run on memory meanwhile: tenant locks kept in one process would let two instances run the same tenant.",
			"redis", redisconn.Describe(cfg.Redis), "error", err, "retry_every", executorReconnectInterval.String())
		eb.since = time.Now()
		eb.metrics.SetDegraded(true)
		return eb, nil
	}
	r, err := eb.connect()
	if err != nil {
		return nil, err
	}
	eb.current.Store(r)
	eb.logReady(pc)
	return eb, nil
}

// redisExecutorStores returns the executor's Redis state stores.
func redisExecutorStores(client redis.UniversalClient, cfg config.Config) (executor.Stores, error) {
	pc := cfg.Executor.Persistence.Redis.WithDefaults()
	keys, err := executor.NewKeysUnder(cfg.Namespace, pc.Namespace)
	if err != nil {
		return executor.Stores{}, err
	}
	o := func(ttl time.Duration) redisstate.Options { return redisstate.Options{Keys: keys, TTL: ttl} }
	ck, err1 := redisstate.NewCheckpoints(client, o(pc.TTL.Checkpoint))
	pr, err2 := redisstate.NewProjections(client, o(pc.TTL.Projection))
	ix, err3 := redisstate.NewTenantIndex(client, o(pc.TTL.Projection))
	lo := o(0)
	lo.DirectLocks = directLocks(cfg)
	lk, err4 := redisstate.NewLocks(client, lo)
	rg, err5 := redisstate.NewRegistry(client, o(pc.TTL.Projection))
	in, err6 := redisstate.NewInspector(client, o(0))
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return executor.Stores{}, err
	}
	return executor.Stores{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg, Inspector: in}, nil
}

// directLocks reports whether the tenant locks send each script alone (redisstate
// Options.DirectLocks): when executor.persistence.redis.lock-pipelining is off, and when
// redis.durability.wait-replicas is on, whose WAIT hook needs each write alone on its
// connection.
func directLocks(cfg config.Config) bool {
	return cfg.Executor.Persistence.Redis.LockPipelining == executor.LockPipeliningOff || cfg.Redis.Durability.On()
}

// newRunner builds the runner on stores with cfg's settings and webhook handlers.
func (eb *executorBackend) newRunner(cfg config.Config, stores executor.Stores) (*executor.Runner, error) {
	ec := cfg.Executor
	pc := ec.Persistence.Redis.WithDefaults()
	r, err := executor.New(executor.Options{
		Stores:             stores,
		LockTTL:            pc.TTL.Lock,
		HeartbeatInterval:  ec.HeartbeatInterval,
		OrphanScanInterval: ec.OrphanScanInterval,
		LivenessTTL:        ec.LivenessTTL,
		LivenessInterval:   ec.LivenessInterval,
		StatsInterval:      ec.MetricsInterval,
		ShutdownTimeout:    cfg.Server.ShutdownTimeout,
		Observer:           eb.metrics,
		Logger:             eb.log,
	})
	if err != nil {
		return nil, err
	}
	for _, h := range ec.Handlers {
		if h.Secret == "" {
			eb.log.Warn("executor webhook calls are unsigned: set executor.handlers[].secret so the receiver can verify them (docs/security.md)",
				"handler", h.Name)
		}
		r.Handle(h.Name, executor.WebhookHandler(h.URL, h.Secret, h.Timeout, nil))
	}
	if cfg.Demo && !slices.ContainsFunc(ec.Handlers, func(h executor.HandlerConfig) bool { return h.Name == demoStepsHandler }) {
		r.Handle(demoStepsHandler, executor.StepsHandler(demoStepTime))
		eb.log.Info("demo: built-in stage handler registered", "handler", demoStepsHandler, "per_stage", demoStepTime.String())
	}
	return r, nil
}

// The built-in stage handler of `serve --demo` (config.Config.Demo): the README's plan names it.
const (
	demoStepsHandler = "steps"
	demoStepTime     = 5 * time.Second
)

// logReady logs that the executor serves.
func (eb *executorBackend) logReady(pc executor.PersistenceConfig) {
	eb.log.Info("stage executor ready", "backend", eb.name, "namespace", pc.Namespace, "lock_ttl", pc.TTL.Lock.String())
}

// runner returns the executor's runner, or EUNAVAILABLE while it is degraded (waiting for
// Redis). It is httpapi.Deps.ExecutorRunner.
func (eb *executorBackend) runner() (*executor.Runner, error) {
	if r := eb.current.Load(); r != nil {
		return r, nil
	}
	return nil, redstate.Errorf(redstate.EUNAVAILABLE,
		"the stage executor is degraded: Redis was unreachable at startup and the executor refuses work until it answers (no tenant locks in memory)")
}

// degraded names the executor when it is degraded (for /readyz), else "".
func (eb *executorBackend) degraded() string {
	if eb.current.Load() == nil {
		return "executor (waiting for Redis since " + eb.since.UTC().Format(time.RFC3339) + ")"
	}
	return ""
}

// Name is "executor".
func (eb *executorBackend) Name() string { return "executor" }

// Start runs the executor (orphan scan, metrics pass) until ctx ends or Close; a degraded
// executor first waits for Redis.
func (eb *executorBackend) Start(ctx context.Context) error {
	ctx, eb.stop = context.WithCancel(ctx)
	eb.done = make(chan struct{})
	go func() {
		defer close(eb.done)
		r := eb.current.Load()
		if r == nil {
			if r = eb.awaitRedis(ctx); r == nil {
				return
			}
		}
		_ = r.Run(ctx)
	}()
	return nil
}

// Health reports the backend; waiting for Redis makes the process unready.
func (eb *executorBackend) Health(context.Context) component.Status {
	st := component.Status{Name: eb.Name(), Backend: eb.name, State: component.StateOK}
	if d := eb.degraded(); d != "" {
		st.State, st.Detail, st.Unready = component.StateDegraded, d, "degraded: "+d
	}
	return st
}

// awaitRedis retries Redis until it answers and the Redis runner is built (returned and made
// current), or ctx ends (nil).
func (eb *executorBackend) awaitRedis(ctx context.Context) *executor.Runner {
	t := time.NewTicker(executorReconnectInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, executorStartupPing)
		err := redisconn.Ping(pctx, eb.client)
		cancel()
		if err != nil {
			continue
		}
		r, err := eb.connect()
		if err != nil {
			eb.log.Error("executor: Redis answers but the executor could not be built on it; retrying", "error", err)
			continue
		}
		eb.current.Store(r)
		eb.metrics.SetDegraded(false)
		eb.log.Info("EXECUTOR RECOVERED: Redis answers; the stage executor now runs on Redis",
			"degraded_for", time.Since(eb.since).Round(time.Second).String())
		return r
	}
}

// Close stops the executor: it starts no task any more, and running stages finish within
// server.shutdown-timeout (and ctx). The Redis client is the root's.
func (eb *executorBackend) Close(ctx context.Context) error {
	if eb.stop == nil {
		return nil
	}
	eb.stop()
	select {
	case <-eb.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("running stages did not finish in time: %w", ctx.Err())
	}
}
