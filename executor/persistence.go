// Package executor is the multi-tenant stage executor of seed 002. This part of the package is
// its state layer: the domain types the executor persists (checkpoints, task and plan
// projections, the tenant index, tenant locks), the store contracts every backend implements
// (memstate in memory, redisstate on Redis standalone, Sentinel or Cluster), and the key
// builder. The conformance suites in executor/statetest check that every backend keeps the
// contracts documented here.
//
// Every error a store returns is a *redstate.Error (possibly wrapped) carrying one of the
// redstate codes; EUNAVAILABLE always means "the backend could not be reached, retry later".
package executor

import "time"

// Seed section 6.3 defaults.
const (
	// DefaultNamespace is the key namespace (executor.persistence.redis.namespace).
	DefaultNamespace = "executor"
	// DefaultCheckpointTTL is the lifetime of a checkpoint after its last Put (ttl.checkpoint).
	DefaultCheckpointTTL = 7 * 24 * time.Hour
	// DefaultProjectionTTL is the lifetime of a task or plan projection and of a tenant-index
	// entry after its last write (ttl.projection).
	DefaultProjectionTTL = 30 * 24 * time.Hour
	// DefaultLockTTL is the tenant lock's lease (ttl.lock, 9000 s = 2.5 h).
	DefaultLockTTL = 9000 * time.Second
)

// PersistenceConfig mirrors the seed's configuration block executor.persistence.redis
// (section 6.3). The zero value means every default.
type PersistenceConfig struct {
	// Namespace prefixes every key ("prod-executor" gives "prod-executor:task:…").
	// Empty: DefaultNamespace.
	Namespace string `koanf:"namespace"`
	// TTL holds the lifetimes of the stored entities.
	TTL TTLConfig `koanf:"ttl"`
	// LockPipelining is how the tenant locks' scripts reach Redis: LockPipeliningAuto (the
	// default; "" means it) or LockPipeliningOff.
	LockPipelining string `koanf:"lock-pipelining"`
}

// LockPipelining values.
const (
	// LockPipeliningAuto sends the acquire, release and renew scripts of concurrent callers to
	// Redis in one pipeline (go-redis's autopipeliner on the one client), except when
	// redis.durability.wait-replicas is on: then each goes alone, so the WAIT after it runs on
	// its connection.
	LockPipeliningAuto = "auto"
	// LockPipeliningOff sends each script alone, one round trip per call, as before the
	// autopipeliner (an escape hatch: go-redis marks its autopipeliner experimental).
	LockPipeliningOff = "off"
)

// TTLConfig holds the seed's ttl.* settings. Zero fields take the defaults.
type TTLConfig struct {
	// Checkpoint is the checkpoint lifetime. Zero: DefaultCheckpointTTL.
	Checkpoint time.Duration `koanf:"checkpoint"`
	// Projection is the projection and tenant-index lifetime. Zero: DefaultProjectionTTL.
	Projection time.Duration `koanf:"projection"`
	// Lock is the default tenant-lock lease. Zero: DefaultLockTTL.
	Lock time.Duration `koanf:"lock"`
}

// WithDefaults returns c with every zero field replaced by its default.
func (c PersistenceConfig) WithDefaults() PersistenceConfig {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.TTL.Checkpoint == 0 {
		c.TTL.Checkpoint = DefaultCheckpointTTL
	}
	if c.TTL.Projection == 0 {
		c.TTL.Projection = DefaultProjectionTTL
	}
	if c.TTL.Lock == 0 {
		c.TTL.Lock = DefaultLockTTL
	}
	if c.LockPipelining == "" {
		c.LockPipelining = LockPipeliningAuto
	}
	return c
}
