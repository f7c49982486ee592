// Package executorblock opens the stage executor as a running block: the runner on the memory
// or Redis state store, with one webhook stage handler per executor.handlers entry.
//
// When Redis is the executor's store and does not answer at startup, with
// on-redis-unavailable: memory the block starts degraded: it has no runner and refuses work
// (EUNAVAILABLE) instead of keeping tenant locks in this process, where two instances could
// run one tenant at once. It retries Redis every ReconnectInterval and, once Redis answers,
// builds the Redis runner and serves normally.
package executorblock

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
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/memstate"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/redisconn"
)

// Name is the block's name in Health, logs and the overview.
const Name = "executor"

// Executor block timings.
const (
	// StartupPing bounds the startup check of Redis.
	StartupPing = 3 * time.Second
	// ReconnectInterval is how often a degraded executor retries Redis.
	ReconnectInterval = time.Second
)

// The built-in stage handler that serve --demo (component.Env.Demo) registers: the README's
// example plan names it.
const (
	DemoStepsHandler = "steps"
	demoStepTime     = 5 * time.Second
)

// Block is the stage executor as a component.
type Block struct {
	// backend is component.BackendMemory or component.BackendRedis.
	backend string
	current atomic.Pointer[executor.Runner]  // nil while degraded
	since   time.Time                        // start of the degraded period
	connect func() (*executor.Runner, error) // builds the Redis runner (degraded start only)
	metrics *executor.Metrics
	// observer is what the runner reports to: metrics, and the statistics history when the
	// environment records one.
	observer executor.Observer
	log      *slog.Logger
	client   redis.UniversalClient // the environment's client; nil without Redis
	keys     executor.Keys         // the Redis keys (Redis only)
	done     chan struct{}         // closed when the started executor returned; nil before Start
	stop     context.CancelFunc
}

// Open builds the executor from cfg (the executor section) on env. With store-type redis (or
// Redis in env and no store type) it pings Redis: unreachable means start degraded
// (on-redis-unavailable: memory, see the package doc) or an error (fail). Errors: a Redis store
// without Redis in env, an unreachable Redis with on-redis-unavailable: fail, and the runner's
// construction errors.
func Open(ctx context.Context, env component.Env, cfg executor.Config) (*Block, error) {
	pc := cfg.Persistence.Redis.WithDefaults()
	b := &Block{log: env.Logger(), metrics: executor.NewMetrics(env.Metrics)}
	b.observer = observerWithHistory(b.metrics, env.History)
	useRedis := cfg.Persistence.StoreType == executor.StoreRedis ||
		(cfg.Persistence.StoreType == "" && env.Redis != nil)
	if !useRedis {
		ck := memstate.NewCheckpoints(memstate.Options{TTL: pc.TTL.Checkpoint})
		pr := memstate.NewProjections(memstate.Options{TTL: pc.TTL.Projection})
		ix := memstate.NewTenantIndex(memstate.Options{TTL: pc.TTL.Projection})
		lk := memstate.NewLocks(memstate.Options{})
		rg := memstate.NewRegistry(memstate.Options{TTL: pc.TTL.Projection})
		stores := executor.Stores{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg,
			Inspector: memstate.Inspector{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg}}
		b.backend = component.BackendMemory
		r, err := b.newRunner(env, cfg, stores)
		if err != nil {
			return nil, err
		}
		b.current.Store(r)
		b.logReady(pc)
		return b, nil
	}

	if env.Redis == nil {
		return nil, errors.New("executor.persistence.store-type redis: no Redis configured: pass --redis URL (or --redis-cluster, --redis-sentinel, --config)")
	}
	keys, err := executor.NewKeys(redstate.Prefix(env.Namespace, pc.KeyPrefix))
	if err != nil {
		return nil, err
	}
	b.client, b.keys, b.backend = env.Redis, keys, component.BackendRedis
	b.connect = func() (*executor.Runner, error) {
		stores, err := RedisStores(env.Redis, keys, pc, DirectLocks(cfg, env))
		if err != nil {
			return nil, err
		}
		return b.newRunner(env, cfg, stores)
	}
	pctx, cancel := context.WithTimeout(ctx, StartupPing)
	err = redisconn.Ping(pctx, env.Redis)
	cancel()
	if err != nil {
		if cfg.Persistence.OnRedisUnavailable == executor.OnUnavailableFail {
			return nil, fmt.Errorf("executor: Redis is unreachable at startup and executor.persistence.on-redis-unavailable is fail: %w", err)
		}
		b.log.Error("EXECUTOR DEGRADED: Redis is unreachable at startup; the stage executor refuses work (503) until Redis answers, then starts on Redis. "+
			"It does not run on memory meanwhile: tenant locks kept in one process would let two instances run the same tenant.",
			"redis", env.RedisName, "error", err, "retry_every", ReconnectInterval.String())
		b.since = time.Now()
		b.metrics.SetDegraded(true)
		return b, nil
	}
	r, err := b.connect()
	if err != nil {
		return nil, err
	}
	b.current.Store(r)
	b.logReady(pc)
	return b, nil
}

// RedisStores returns the executor's Redis state stores under keys, with the TTLs and lock
// pipelining of pc; directLocks sends each lock script alone (see DirectLocks).
func RedisStores(client redis.UniversalClient, keys executor.Keys, pc executor.PersistenceConfig, directLocks bool) (executor.Stores, error) {
	o := func(ttl time.Duration) redisstate.Options { return redisstate.Options{Keys: keys, TTL: ttl} }
	ck, err1 := redisstate.NewCheckpoints(client, o(pc.TTL.Checkpoint))
	pr, err2 := redisstate.NewProjections(client, o(pc.TTL.Projection))
	ix, err3 := redisstate.NewTenantIndex(client, o(pc.TTL.Projection))
	lo := o(0)
	lo.DirectLocks = directLocks
	lo.BatchedLocks = pc.LockPipelining == executor.LockPipeliningBatch
	lk, err4 := redisstate.NewLocks(client, lo)
	rg, err5 := redisstate.NewRegistry(client, o(pc.TTL.Projection))
	in, err6 := redisstate.NewInspector(client, o(0))
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return executor.Stores{}, err
	}
	return executor.Stores{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg, Inspector: in}, nil
}

// DirectLocks reports whether the tenant locks send each script alone (redisstate
// Options.DirectLocks): when executor.persistence.redis.lock-pipelining is off, and when writes
// wait for replicas (component.Env.RedisWaitsForReplicas), whose WAIT needs each write alone on
// its connection.
func DirectLocks(cfg executor.Config, env component.Env) bool {
	return cfg.Persistence.Redis.LockPipelining == executor.LockPipeliningOff || env.RedisWaitsForReplicas
}

// newRunner builds the runner on stores with cfg's settings and webhook handlers.
func (b *Block) newRunner(env component.Env, cfg executor.Config, stores executor.Stores) (*executor.Runner, error) {
	pc := cfg.Persistence.Redis.WithDefaults()
	r, err := executor.New(executor.Options{
		Stores:             stores,
		LockTTL:            pc.TTL.Lock,
		HeartbeatInterval:  cfg.HeartbeatInterval,
		OrphanScanInterval: cfg.OrphanScanInterval,
		LivenessTTL:        cfg.LivenessTTL,
		LivenessInterval:   cfg.LivenessInterval,
		StatsInterval:      cfg.MetricsInterval,
		ShutdownTimeout:    env.Shutdown(),
		Observer:           b.observer,
		Logger:             b.log,
	})
	if err != nil {
		return nil, err
	}
	for _, h := range cfg.Handlers {
		if h.Secret == "" {
			b.log.Warn("executor webhook calls are unsigned: set executor.handlers[].secret so the receiver can verify them (docs/security.md)",
				"handler", h.Name)
		}
		r.Handle(h.Name, executor.WebhookHandler(h.URL, h.Secret, h.Timeout, nil))
	}
	if env.Demo && !slices.ContainsFunc(cfg.Handlers, func(h executor.HandlerConfig) bool { return h.Name == DemoStepsHandler }) {
		r.Handle(DemoStepsHandler, executor.StepsHandler(demoStepTime))
		b.log.Info("demo: built-in stage handler registered", "handler", DemoStepsHandler, "per_stage", demoStepTime.String())
	}
	return r, nil
}

// logReady logs that the executor serves.
func (b *Block) logReady(pc executor.PersistenceConfig) {
	b.log.Info("stage executor ready", "backend", b.backend, "namespace", pc.KeyPrefix, "lock_ttl", pc.TTL.Lock.String())
}

// Runner returns the executor's runner, or EUNAVAILABLE while it is degraded (waiting for
// Redis).
func (b *Block) Runner() (*executor.Runner, error) {
	if r := b.current.Load(); r != nil {
		return r, nil
	}
	return nil, redstate.Errorf(redstate.EUNAVAILABLE,
		"the stage executor is degraded: Redis was unreachable at startup and the executor refuses work until it answers (no tenant locks in memory)")
}

// Lister returns the lister of the executor's Redis state (plans, locks, checkpoints), or nil
// on the memory backend.
func (b *Block) Lister() *redisstate.Lister {
	if b.client == nil {
		return nil
	}
	l, err := redisstate.NewLister(b.client, redisstate.Options{Keys: b.keys})
	if err != nil {
		return nil
	}
	return l
}

// degraded names the executor when it is degraded, else "".
func (b *Block) degraded() string {
	if b.current.Load() == nil {
		return "executor (waiting for Redis since " + b.since.UTC().Format(time.RFC3339) + ")"
	}
	return ""
}

// Name is "executor".
func (b *Block) Name() string { return Name }

// Backend is component.BackendMemory or component.BackendRedis.
func (b *Block) Backend() string { return b.backend }

// Start runs the executor (orphan scan, metrics pass) until ctx ends or Close; a degraded
// executor first waits for Redis.
func (b *Block) Start(ctx context.Context) error {
	ctx, b.stop = context.WithCancel(ctx)
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		r := b.current.Load()
		if r == nil {
			if r = b.awaitRedis(ctx); r == nil {
				return
			}
		}
		_ = r.Run(ctx)
	}()
	return nil
}

// Health reports the backend; waiting for Redis makes the process unready.
func (b *Block) Health(context.Context) component.Status {
	st := component.Status{Name: b.Name(), Backend: b.backend, State: component.StateOK}
	if d := b.degraded(); d != "" {
		st.State, st.Detail, st.Unready = component.StateDegraded, d, "degraded: "+d
	}
	return st
}

// awaitRedis retries Redis until it answers and the Redis runner is built (returned and made
// current), or ctx ends (nil).
func (b *Block) awaitRedis(ctx context.Context) *executor.Runner {
	t := time.NewTicker(ReconnectInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, StartupPing)
		err := redisconn.Ping(pctx, b.client)
		cancel()
		if err != nil {
			continue
		}
		r, err := b.connect()
		if err != nil {
			b.log.Error("executor: Redis answers but the executor could not be built on it; retrying", "error", err)
			continue
		}
		b.current.Store(r)
		b.metrics.SetDegraded(false)
		b.log.Info("EXECUTOR RECOVERED: Redis answers; the stage executor now runs on Redis",
			"degraded_for", time.Since(b.since).Round(time.Second).String())
		return r
	}
}

// Close stops the executor: it starts no task any more, and running stages finish within the
// environment's shutdown timeout (and ctx). The Redis client is the environment's.
func (b *Block) Close(ctx context.Context) error {
	if b.stop == nil {
		return nil
	}
	b.stop()
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("running stages did not finish in time: %w", ctx.Err())
	}
}
