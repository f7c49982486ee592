package redisstate

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/redisconn"
)

var _ executor.TenantLocks = (*Locks)(nil)

// Locks is the Redis executor.TenantLocks: one fenced lease (internal/lease) per tenant. The
// lock is the String Keys.TenantLock(tenant) holding the holder's token with a PX TTL; the
// fencing counter is Keys.TenantFence(tenant), in the same Cluster slot, with
// executor.FenceTTL (lease.CounterTTL), refreshed at every acquisition. A fence is the larger of
// the counter plus one and the server clock in microseconds, so it grows across a failover that
// lost the counter's last writes. Acquire, release and renew are one script call each.
//
// The scripts are streamed through the client's full-duplex autopipeliner
// (lease.RedisOptions.Stream): the calls of concurrent callers are written to one held
// connection as they are made and their replies read as they come, so Redis is not left idle
// while a batch's replies travel back; each caller still waits for its own reply, so a call takes
// one round trip as before. Options.BatchedLocks uses the half-duplex autopipeliner instead (one
// batch in flight, fewer system calls, better when the CPUs are saturated), Options.DirectLocks
// the client itself, as does a client made with redis.durability on (redisconn.WaitsForReplicas),
// whose WAIT must follow each write on its connection. Exists and Holder always use the client.
type Locks struct {
	base
	leases *lease.Redis
}

// NewLocks returns the lock manager on client. Errors: EINVALID (also when the client cannot
// give an autopipeliner, e.g. it is closed).
func NewLocks(client redis.UniversalClient, opts Options) (*Locks, error) {
	b, err := newBase(client, opts, executor.DefaultLockTTL, "tenant locks")
	if err != nil {
		return nil, err
	}
	// A client whose writes wait for replicas needs each write alone on its connection.
	direct := opts.DirectLocks || redisconn.WaitsForReplicas(client)
	leases, err := lease.NewRedis(client, lease.RedisOptions{AutoPipeline: !direct, Stream: !opts.BatchedLocks})
	if err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "redisstate: tenant locks: the client gives no autopipeliner (set DirectLocks)")
	}
	return &Locks{base: b, leases: leases}, nil
}

// leaseKeys returns the lease of tenantID's lock.
func (l *Locks) leaseKeys(tenantID string) lease.Keys {
	return lease.Keys{Lease: l.keys.TenantLock(tenantID), Fence: l.keys.TenantFence(tenantID)}
}

// TryAcquire implements executor.TenantLocks (lease.Redis.TryAcquire).
func (l *Locks) TryAcquire(ctx context.Context, tenantID, owner string, ttl time.Duration) (executor.Lease, bool, error) {
	if err := executor.ValidateLockArgs(tenantID, owner, ttl); err != nil {
		return executor.Lease{}, false, err
	}
	token := executor.NewLockToken(owner)
	sent := l.now()
	fence, ok, err := l.leases.TryAcquire(ctx, l.leaseKeys(tenantID), token, ttl)
	if err != nil || !ok {
		return executor.Lease{}, false, mapErr(err, "acquire tenant lock")
	}
	return executor.Lease{Tenant: tenantID, Owner: owner, Token: token, Fence: fence, ExpiresAt: sent.Add(ttl)}, true, nil
}

// Release implements executor.TenantLocks (lease.Redis.Release).
func (l *Locks) Release(ctx context.Context, tenantID, token string) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	held, err := l.leases.Release(ctx, l.leaseKeys(tenantID), token)
	if err != nil {
		return mapErr(err, "release tenant lock")
	}
	if !held {
		return notOwner(tenantID)
	}
	return nil
}

// Renew implements executor.TenantLocks (lease.Redis.Renew).
func (l *Locks) Renew(ctx context.Context, tenantID, token string, ttl time.Duration) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	if err := executor.ValidateLockTTL(ttl); err != nil {
		return err
	}
	held, err := l.leases.Renew(ctx, l.leaseKeys(tenantID), token, ttl)
	if err != nil {
		return mapErr(err, "renew tenant lock")
	}
	if !held {
		return notOwner(tenantID)
	}
	return nil
}

// Exists implements executor.TenantLocks.
func (l *Locks) Exists(ctx context.Context, tenantID string) (bool, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return false, err
	}
	n, err := l.client.Exists(ctx, l.keys.TenantLock(tenantID)).Result()
	if err != nil {
		return false, mapErr(err, "tenant lock exists")
	}
	return n == 1, nil
}

// Holder implements executor.TenantLocks: one GET (lease.Redis.Holder).
func (l *Locks) Holder(ctx context.Context, tenantID string) (string, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return "", err
	}
	v, err := l.leases.Holder(ctx, l.leaseKeys(tenantID))
	return v, mapErr(err, "tenant lock holder")
}

func checkToken(tenantID, token string) error {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return err
	}
	return executor.ValidateToken(token)
}

func notOwner(tenantID string) error {
	return redstate.Errorf(redstate.ECONFLICT, "tenant lock %s is not held by this token (released, expired or taken)", tenantID)
}
