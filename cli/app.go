package cli

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// app is redstate's composition root, used by serve and by every command: it owns the
// process's one Redis client (one per topology, shared by every block, pool sized by
// redis.pool-size) and its one SQL pool, gives each block its options and its key prefix
// (<namespace><block prefix>, see keyPrefix), and keeps the components it built in start order.
// A command builds only the components it needs.
type app struct {
	cfg     config.Config
	log     *slog.Logger
	metrics *metrics.Metrics
	// redis is the one Redis client; nil when no Redis is configured (memory backends).
	redis redis.UniversalClient
	// cache serves the reads blocks designate from process memory (redis.client-cache); nil
	// when off or without Redis.
	cache *redisconn.Cache
	// reach caches Redis reachability for the components' Health (nil without Redis).
	reach *redisconn.Reachability
	// prober pings Redis for the blocks' circuit breakers (nil without Redis).
	prober *redisconn.Prober
	// createsSQL is true for serve, which creates the embedded SQLite database when it does not
	// exist; every other command refuses to open one that does not (openSQL).
	createsSQL bool
	// sqlOnce opens db on first need.
	sqlOnce sync.Once
	db      *sqldb.DB
	sqlErr  error
	// extraDBs are pools a source opens to another database (index.postgres.url), by URL.
	extraDBs map[string]*sqldb.DB
	parts    component.Group
}

// newApp opens the Redis client of cfg (not yet connected: go-redis dials on first use) and
// returns the root, with the client-side cache when redis.client-cache is on. cfg must be valid.
func newApp(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (*app, error) {
	if m == nil {
		m = metrics.New()
	}
	a := &app{cfg: cfg, log: log, metrics: m, extraDBs: map[string]*sqldb.DB{}}
	if cfg.Redis.Configured() {
		client, err := redisconn.New(cfg.Redis)
		if err != nil {
			return nil, err
		}
		a.redis = client
		a.prober = redisconn.NewProber(client, cfg.Redis.Durability)
		cache, err := redisconn.NewCache(cfg.Redis)
		if err != nil {
			_ = client.Close()
			return nil, err
		}
		if cache != nil {
			a.cache = cache
			metrics.RegisterClientCache(m, cache.Stats)
			log.Info("client-side cache on", "cache", cfg.Redis.ClientCache.String())
		}
	}
	a.reach = redisconn.NewReachability(a.redis)
	if a.redis != nil {
		metrics.RegisterRedisProbe(m, a.reach.Check)
	}
	return a, nil
}

// env is what every block's Open receives: the root's one Redis client, cache, SQL pool,
// namespace, metrics and logger. Its breaker probe pings Redis outside the client's pool
// (redisconn.Prober: on Sentinel the master the sentinels name at that moment, on Cluster every
// master), so a block's circuit breaker closes as soon as Redis answers again.
func (a *app) env() component.Env {
	e := component.Env{
		Redis: a.redis, Cache: a.cache, Reachability: a.reach,
		RedisDialTimeout: a.cfg.Redis.DialTimeout, RedisWaitsForReplicas: a.cfg.Redis.Durability.On(),
		SQL: a.sql, SQLAt: a.sqlAt, Namespace: a.cfg.Namespace, Metrics: a.metrics, Log: a.log,
		ShutdownTimeout: a.cfg.Server.ShutdownTimeout, Demo: a.cfg.Demo,
	}
	if a.redis != nil {
		e.RedisName = redisconn.Describe(a.cfg.Redis)
	}
	if a.prober != nil {
		e.BreakerProbe = a.prober.Ping
	}
	return e
}

// keyPrefix is the one key rule: every Redis key of a block starts with the global namespace
// followed by the block's own prefix (docs/architecture.md "Keys").
func (a *app) keyPrefix(blockPrefix string) string { return a.cfg.Namespace + blockPrefix }

// sql returns the process's SQL pool (database.url, or the embedded SQLite database), opening
// it on first call.
func (a *app) sql(ctx context.Context) (*sqldb.DB, error) {
	a.sqlOnce.Do(func() { a.db, a.sqlErr = openSQL(ctx, a.cfg, a.createsSQL, a.log) })
	return a.db, a.sqlErr
}

// sqlAt returns a pool on another database a source reads (the main pool when url is the
// main database's), opened once per URL and closed with the root.
func (a *app) sqlAt(ctx context.Context, url string) (*sqldb.DB, error) {
	if url == a.cfg.Database.URL && url != "" {
		return a.sql(ctx)
	}
	if db, ok := a.extraDBs[url]; ok {
		return db, nil
	}
	db, err := sqldb.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	a.extraDBs[url] = db
	return db, nil
}

// requireRedis returns the Redis client, or an error for the commands that administer Redis
// state: a one-off process's memory backend is always empty.
func (a *app) requireRedis() (redis.UniversalClient, error) {
	if a.redis == nil {
		return nil, errors.New("no Redis configured: pass --redis URL (or --redis-cluster, --redis-sentinel, --config); the memory backend of a one-off command is always empty")
	}
	return a.redis, nil
}

// add registers a built component; start starts them in the order added.
func (a *app) add(c component.Component) { a.parts.Add(c) }

// start starts every component added so far, in order; their background work runs until ctx
// ends or close.
func (a *app) start(ctx context.Context) error { return a.parts.Start(ctx) }

// health is every component's status, in start order (/readyz and the overview).
func (a *app) health(ctx context.Context) []component.Status { return a.parts.Health(ctx) }

// close closes the components in reverse start order, then the SQL pools and the Redis
// client, within ctx; every error is returned.
func (a *app) close(ctx context.Context) error {
	errs := []error{a.parts.Close(ctx)}
	for url, db := range a.extraDBs {
		errs = append(errs, db.Close())
		delete(a.extraDBs, url)
	}
	if a.db != nil {
		errs = append(errs, a.db.Close())
		a.db = nil
	}
	if a.cache != nil {
		errs = append(errs, a.cache.Close())
		a.cache = nil
	}
	if a.prober != nil {
		errs = append(errs, a.prober.Close())
		a.prober = nil
	}
	if a.redis != nil {
		errs = append(errs, a.redis.Close())
		a.redis = nil
	}
	return errors.Join(errs...)
}

// closeWithin closes the root within d, logging what did not close cleanly.
func (a *app) closeWithin(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := a.close(ctx); err != nil {
		a.log.Warn("closing", "error", err)
	}
}
