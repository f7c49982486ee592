package memstate

import (
	"context"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/lease"
)

var _ executor.TenantLocks = (*Locks)(nil)

// Locks is the memory executor.TenantLocks: locks shared by the goroutines of one process, one
// lease of a memory lease store (internal/lease) per tenant, with the Redis locks' semantics.
// Fences start above the clock in microseconds and never decrease. Safe for concurrent use.
type Locks struct {
	now    func() time.Time
	leases *lease.Memory
}

// NewLocks returns a lock table with nothing held. Only opts.Now is used.
func NewLocks(opts Options) *Locks {
	opts = opts.withDefaults(executor.DefaultLockTTL)
	return &Locks{now: opts.Now, leases: lease.NewMemory(opts.Now)}
}

// lockPrefix starts the lease key of every tenant's lock in the lease store.
const lockPrefix = "lock:{"

// leaseKeys names tenantID's lock in the lease store: "lock:{tenant}" and "fence:{tenant}",
// one hash tag as the lease store requires (tenant ids hold no braces).
func leaseKeys(tenantID string) lease.Keys {
	return lease.Keys{Lease: lockPrefix + tenantID + "}", Fence: "fence:{" + tenantID + "}"}
}

// TryAcquire implements executor.TenantLocks.
func (l *Locks) TryAcquire(ctx context.Context, tenantID, owner string, ttl time.Duration) (executor.Lease, bool, error) {
	if err := executor.ValidateLockArgs(tenantID, owner, ttl); err != nil {
		return executor.Lease{}, false, err
	}
	token := executor.NewLockToken(owner)
	sent := l.now() // read before the store's clock: ExpiresAt is never after the real expiry
	fence, ok, err := l.leases.TryAcquire(ctx, leaseKeys(tenantID), token, ttl)
	if err != nil || !ok {
		return executor.Lease{}, false, err
	}
	return executor.Lease{Tenant: tenantID, Owner: owner, Token: token, Fence: fence, ExpiresAt: sent.Add(ttl)}, true, nil
}

// Release implements executor.TenantLocks.
func (l *Locks) Release(ctx context.Context, tenantID, token string) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	held, err := l.leases.Release(ctx, leaseKeys(tenantID), token)
	if err == nil && !held {
		return notOwner(tenantID)
	}
	return err
}

// Renew implements executor.TenantLocks.
func (l *Locks) Renew(ctx context.Context, tenantID, token string, ttl time.Duration) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	if err := executor.ValidateLockTTL(ttl); err != nil {
		return err
	}
	held, err := l.leases.Renew(ctx, leaseKeys(tenantID), token, ttl)
	if err == nil && !held {
		return notOwner(tenantID)
	}
	return err
}

// Exists implements executor.TenantLocks.
func (l *Locks) Exists(ctx context.Context, tenantID string) (bool, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return false, err
	}
	h, err := l.leases.Holder(ctx, leaseKeys(tenantID))
	return h != "", err
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

// Holder implements executor.TenantLocks.
func (l *Locks) Holder(ctx context.Context, tenantID string) (string, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return "", err
	}
	return l.leases.Holder(ctx, leaseKeys(tenantID))
}
