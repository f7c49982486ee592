package redisstate

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.TenantLocks = (*Locks)(nil)

// Locks is the Redis executor.TenantLocks. The lock is the String Keys.TenantLock(tenant)
// holding the holder's token with a PX TTL (SET NX PX); the fencing counter is
// Keys.TenantFence(tenant), in the same Cluster slot, with executor.FenceTTL. A fence is the
// larger of the counter plus one and the server clock in microseconds (acquireScript), so it
// grows across a failover that lost the counter's last writes. Acquire, release and renew are
// one script call each (one round trip).
type Locks struct{ base }

// NewLocks returns the lock manager on client. Errors: EINVALID.
func NewLocks(client redis.UniversalClient, opts Options) (*Locks, error) {
	b, err := newBase(client, opts, executor.DefaultLockTTL, "tenant locks")
	if err != nil {
		return nil, err
	}
	return &Locks{b}, nil
}

// TryAcquire implements executor.TenantLocks (acquireScript).
func (l *Locks) TryAcquire(ctx context.Context, tenantID, owner string, ttl time.Duration) (executor.Lease, bool, error) {
	if err := executor.ValidateLockArgs(tenantID, owner, ttl); err != nil {
		return executor.Lease{}, false, err
	}
	token := executor.NewLockToken(owner)
	sent := l.now()
	fence, err := acquireScript.Run(ctx, l.client,
		[]string{l.keys.TenantLock(tenantID), l.keys.TenantFence(tenantID)}, token, ms(ttl), ms(executor.FenceTTL(ttl))).Int64()
	if err != nil {
		return executor.Lease{}, false, mapErr(err, "acquire tenant lock")
	}
	if fence == 0 {
		return executor.Lease{}, false, nil
	}
	return executor.Lease{Tenant: tenantID, Owner: owner, Token: token, Fence: fence, ExpiresAt: sent.Add(ttl)}, true, nil
}

// Release implements executor.TenantLocks (deleteIfScript).
func (l *Locks) Release(ctx context.Context, tenantID, token string) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	n, err := deleteIfScript.Run(ctx, l.client, []string{l.keys.TenantLock(tenantID)}, token).Int()
	if err != nil {
		return mapErr(err, "release tenant lock")
	}
	if n != 1 {
		return notOwner(tenantID)
	}
	return nil
}

// Renew implements executor.TenantLocks (renewIfScript).
func (l *Locks) Renew(ctx context.Context, tenantID, token string, ttl time.Duration) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	if err := executor.ValidateLockTTL(ttl); err != nil {
		return err
	}
	n, err := renewIfScript.Run(ctx, l.client, []string{l.keys.TenantLock(tenantID)}, token, ms(ttl)).Int()
	if err != nil {
		return mapErr(err, "renew tenant lock")
	}
	if n != 1 {
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

// Holder implements executor.TenantLocks: one GET.
func (l *Locks) Holder(ctx context.Context, tenantID string) (string, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return "", err
	}
	v, err := l.client.Get(ctx, l.keys.TenantLock(tenantID)).Result()
	if err == redis.Nil {
		return "", nil
	}
	if err != nil {
		return "", mapErr(err, "tenant lock holder")
	}
	return v, nil
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
