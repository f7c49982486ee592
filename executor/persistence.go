// Package executor is the multi-tenant stage executor: plans of tasks, each task
// a tenant's ordered stages run by a named StageHandler (a Go function, or a webhook), at most
// one running task per tenant across every instance (a fenced tenant lock renewed while it
// runs), a checkpoint after every stage, pause, resume, cancel and retry (from the checkpoint
// or from the start), and orphan detection for tasks whose instance died.
//
// Runner is the runtime (New with Options; CreatePlan, PlanStatus, TaskStatus, Pause, Resume,
// Cancel, Retry; OnEvent). It runs on the state layer this package declares as contracts, its
// Stores: CheckpointStore (compare-and-set checkpoints), ProjectionStore (task and plan read
// models), TenantIndex, TenantLocks and TaskRegistry, with the key builder (Keys). Backends:
// executor/redisstate (Redis standalone, Sentinel or Cluster) and executor/memstate (in
// memory, same semantics); executor/statetest is the conformance suite both pass. The Example
// runs a plan on Redis through a go-redis client; docs/executor.md states the guarantees.
//
// Every error a store returns is a *redstate.Error (possibly wrapped) carrying one of the
// redstate codes; EUNAVAILABLE always means "the backend could not be reached, retry later".
package executor

import "time"

// Seed section 6.3 defaults.
const (
	// DefaultNamespace is the key namespace (executor.persistence.redis.key-prefix).
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
	// KeyPrefix prefixes every key ("prod-executor" gives "prod-executor:task:…").
	// Empty: DefaultNamespace.
	KeyPrefix string `koanf:"key-prefix"`
	// TTL holds the lifetimes of the stored entities.
	TTL TTLConfig `koanf:"ttl"`
	// LockPipelining is how the tenant locks' scripts reach Redis: LockPipeliningAuto (the
	// default; "" means it), LockPipeliningBatch or LockPipeliningOff.
	LockPipelining string `koanf:"lock-pipelining"`
}

// LockPipelining values.
const (
	// LockPipeliningAuto streams the acquire, release and renew scripts of concurrent callers
	// to Redis on one held connection (go-redis's full-duplex autopipeliner on the one client):
	// each call is written as it is made and the replies read as they come. Except when
	// redis.durability.wait-replicas is on: then each goes alone, so the WAIT after it runs on
	// its connection.
	LockPipeliningAuto = "auto"
	// LockPipeliningBatch sends them in batches instead (go-redis's half-duplex autopipeliner:
	// one batch in flight, the calls made meanwhile leave together in the next). Fewer system
	// calls per lock call: the better choice when the CPUs, not Redis, are the limit.
	LockPipeliningBatch = "batch"
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
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultNamespace
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
