// Package redisstate is the Redis backend of the executor's state layer: CheckpointStore,
// ProjectionStore, TenantIndex and TenantLocks on a standalone server, behind Sentinel (a
// failover *redis.Client) or on Redis Cluster, with the same code.
//
// Every atomic step is one Lua script (scripts.go) with a KEYS/ARGV/return comment; all keys a
// script touches share a Cluster slot (the lock and its fence counter: see executor.Keys) and no
// key is built inside Lua. Every key name comes from executor.Keys.
package redisstate

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/rediserr"
)

// Options configure a Redis store. The zero value is usable.
type Options struct {
	// Keys builds every key. Zero value: executor.NewKeys(redstate.KeyPrefix{}) (namespace "executor").
	Keys executor.Keys
	// TTL is the lifetime a write gives an entry. Zero: the entity's seed default
	// (executor.DefaultCheckpointTTL, executor.DefaultProjectionTTL); unused by Locks.
	TTL time.Duration
	// Now is the clock for savedAt stamps and lease estimates. Nil: time.Now.
	Now func() time.Time
	// CacheSize bounds the checkpoint store's local read-through cache (entries). Zero: 10,000;
	// negative: no cache. Unused by the other stores.
	CacheSize int
	// DirectLocks makes Locks send each acquire, release and renew script on the client itself,
	// one round trip per call, instead of through the client's autopipeliner (see Locks).
	// Set it when the client carries redisconn's durability hook (redis.durability.wait-replicas):
	// the autopipeliner runs a lone caller's command through the client's per-command hooks
	// outside any Conn, where that hook sends the write and its WAIT as two calls that may
	// take two pooled connections, so the WAIT would not cover the write (batches of several
	// commands get their WAIT inside the pipeline and are fine). Unused by the other stores.
	DirectLocks bool
	// BatchedLocks, without DirectLocks, sends the lock scripts through the client's
	// half-duplex autopipeliner (one batch written, its replies read, then the next) instead of
	// streaming them on one held connection (the default, see Locks). Unused by the other stores.
	BatchedLocks bool
}

// base is what every store shares.
type base struct {
	client redis.UniversalClient
	keys   executor.Keys
	ttl    time.Duration
	now    func() time.Time
}

func newBase(client redis.UniversalClient, opts Options, defTTL time.Duration, what string) (base, error) {
	if client == nil {
		return base{}, redstate.Errorf(redstate.EINVALID, "redisstate: %s needs a Redis client", what)
	}
	if _, ok := client.(*redis.Ring); ok {
		return base{}, redstate.Errorf(redstate.EINVALID, "redisstate: redis.Ring is not supported; use a standalone, Sentinel or Cluster client")
	}
	if opts.Keys.IsZero() {
		opts.Keys = executor.MustKeys(redstate.KeyPrefix{})
	}
	if opts.TTL == 0 {
		opts.TTL = defTTL
	}
	if opts.TTL < time.Millisecond {
		return base{}, redstate.Errorf(redstate.EINVALID, "redisstate: %s TTL must be at least 1ms, got %s", what, opts.TTL)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return base{client: client, keys: opts.Keys, ttl: opts.TTL, now: opts.Now}, nil
}

// mapErr turns a go-redis error into a *redstate.Error: redis.Nil is ENOTFOUND; replies that
// mean "not now" (LOADING, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, READONLY, BUSY, NOREPLICAS, OOM,
// leftover MOVED/ASK) and every transport failure (dial, timeout, closed connection, cancelled
// context, pool exhausted) are EUNAVAILABLE; any other error reply is EINTERNAL.
func mapErr(err error, op string) error { return rediserr.Map(err, op) }

// ms formats d in whole milliseconds (at least 1) for PX/PEXPIRE arguments.
func ms(d time.Duration) int64 { return max(int64(d/time.Millisecond), 1) }
