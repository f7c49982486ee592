// Package memstate is the in-memory backend of the executor's state layer: CheckpointStore,
// ProjectionStore, TenantIndex and TenantLocks with exactly the Redis backend's semantics
// (checked by executor/statetest), for tests, single-instance deployments and the seed's
// "degrade to memory" mode. Nothing survives the process.
//
// Expiry is lazy: an expired entry is invisible from its deadline on and is dropped when it is
// next touched or by the sweep that runs every sweepEvery writes.
package memstate

import "time"

// Options configure a memory store. The zero value is usable.
type Options struct {
	// TTL is the lifetime a write gives an entry. Zero: the entity's seed default
	// (executor.DefaultCheckpointTTL or executor.DefaultProjectionTTL); unused by Locks.
	TTL time.Duration
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

func (o Options) withDefaults(ttl time.Duration) Options {
	if o.TTL <= 0 {
		o.TTL = ttl
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// sweepEvery is how many writes pass between sweeps of expired entries.
const sweepEvery = 1024

// entry is a value with its deadline.
type entry[V any] struct {
	val     V
	expires time.Time
}

// expired reports whether e is past its deadline at now.
func (e entry[V]) expired(now time.Time) bool { return !now.Before(e.expires) }

// sweep deletes m's expired entries.
func sweep[V any](m map[string]entry[V], now time.Time) {
	for k, e := range m {
		if e.expired(now) {
			delete(m, k)
		}
	}
}
