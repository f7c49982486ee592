package component

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// Env is what every block's Open receives from the process that runs it: the one Redis client,
// its client-side cache, the one SQL pool, the namespace every key starts with, the metrics and
// the logger. The server's composition root builds one Env for all blocks; a Go program that
// embeds a block builds its own (see the blocks' examples). A block never opens a connection of
// its own and never reads configuration beyond its own section.
type Env struct {
	// Redis is the one Redis client; nil means no Redis (the blocks run on memory).
	Redis redis.UniversalClient
	// RedisName describes the Redis deployment in logs (never with a password); empty without
	// Redis.
	RedisName string
	// RedisDialTimeout bounds a startup ping (plus a second); zero means 5 s.
	RedisDialTimeout time.Duration
	// RedisWaitsForReplicas is true when writes wait for replicas (redis.durability on): such a
	// write needs its connection alone, so blocks must not pipeline it with others.
	RedisWaitsForReplicas bool
	// Cache serves the reads a block designates from process memory; nil when off.
	Cache *redisconn.Cache
	// Reachability is the shared, cached "does Redis answer?" check for Health; nil without
	// Redis (always reachable).
	Reachability *redisconn.Reachability
	// BreakerProbe pings Redis outside the client's pool, for circuit breakers that must close
	// as soon as Redis answers again; nil: breakers wait for their own timers.
	BreakerProbe func(context.Context) error
	// SQL returns the one SQL pool, opened on first call; nil means no SQL database.
	SQL func(context.Context) (*sqldb.DB, error)
	// SQLAt returns a pool on another database a block reads (the main pool when url is the
	// main database's), opened once per URL and closed by the process; nil: SQL's pool only.
	SQLAt func(ctx context.Context, url string) (*sqldb.DB, error)
	// Namespace starts every Redis key of every block.
	Namespace string
	// Metrics receives the blocks' metrics; nil records nothing.
	Metrics *metrics.Metrics
	// History records the blocks' statistics history (the dashboard's charts): the process's
	// one writer. nil records nothing (its methods are safe on nil).
	History *history.Recorder
	// Log receives the blocks' logs; nil discards them.
	Log *slog.Logger
	// ShutdownTimeout is how long running jobs and stages get to finish when a block closes;
	// zero means 30 s.
	ShutdownTimeout time.Duration
	// Demo adds each block's demonstration parts (serve --demo), never for production.
	Demo bool
}

// ErrNoSQL is returned by Env.DB when the environment has no SQL database.
var ErrNoSQL = errors.New("no SQL database in this environment")

// DB returns the SQL pool (Env.SQL), or ErrNoSQL.
func (e Env) DB(ctx context.Context) (*sqldb.DB, error) {
	if e.SQL == nil {
		return nil, ErrNoSQL
	}
	return e.SQL(ctx)
}

// DBAt returns a pool on the database at url (Env.SQLAt), falling back to Env.DB when the
// environment opens no other database.
func (e Env) DBAt(ctx context.Context, url string) (*sqldb.DB, error) {
	if e.SQLAt == nil {
		return e.DB(ctx)
	}
	return e.SQLAt(ctx, url)
}

// Logger returns Env.Log, or a logger that discards everything.
func (e Env) Logger() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// Shutdown returns Env.ShutdownTimeout, or 30 s when unset.
func (e Env) Shutdown() time.Duration {
	if e.ShutdownTimeout <= 0 {
		return 30 * time.Second
	}
	return e.ShutdownTimeout
}

// StartupPing pings Redis once, bounded by RedisDialTimeout plus a second: what a block does
// before deciding how to start. It returns nil without Redis.
func (e Env) StartupPing(ctx context.Context) error {
	if e.Redis == nil {
		return nil
	}
	d := e.RedisDialTimeout
	if d <= 0 {
		d = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, d+time.Second)
	defer cancel()
	return redisconn.Ping(ctx, e.Redis)
}

// Backend names, as blocks report them in logs, the "backend" metric label and Health.
const (
	// BackendMemory: the block's state lives in this process.
	BackendMemory = "memory"
	// BackendRedis: the block's state lives in Redis.
	BackendRedis = "redis"
)
