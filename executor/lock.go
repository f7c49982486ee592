package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
)

// Lease is a held tenant lock.
type Lease struct {
	// Tenant is the locked tenant.
	Tenant string
	// Owner is who acquired it (usually the task id).
	Owner string
	// Token identifies this acquisition; only its holder can Release or Renew. It is unique
	// per acquisition (even for the same owner), so a stale holder of an earlier lease cannot
	// touch a later one.
	Token string
	// Fence is the fencing token: per tenant it strictly increases from one acquisition to the
	// next, so a resource that remembers the highest fence it has seen can reject a holder that
	// lost the lock without knowing it (paused process, expired lease, lock key lost to a
	// failover). It is at least the server clock in microseconds at the acquisition, so it
	// also increases across a failover that lost the fence counter's last writes, as long as
	// the servers' clocks agree to within the failover's duration (see docs/resilience.md).
	// Pass it to every stage.
	Fence int64
	// ExpiresAt is a conservative local estimate of the lease's end: the time the acquire (or
	// the last successful renew) was sent, plus its TTL.
	ExpiresAt time.Time
}

// TenantLocks is the distributed per-tenant lock (at most one running task per tenant), with
// owner-checked release and renew and fencing tokens. Implementations are safe for concurrent use.
type TenantLocks interface {
	// TryAcquire takes the tenant's lock for ttl if nobody holds it (SET NX PX semantics) and
	// returns the lease with a fresh Token and Fence. ok is false, with a zero Lease, if the lock
	// is held. Errors: EINVALID (bad tenant or owner id, ttl < 1ms), EUNAVAILABLE.
	TryAcquire(ctx context.Context, tenantID, owner string, ttl time.Duration) (lease Lease, ok bool, err error)
	// Release frees the lock if token still holds it.
	// Errors: EINVALID, ECONFLICT (not the owner: released, expired or taken by another),
	// EUNAVAILABLE.
	Release(ctx context.Context, tenantID, token string) error
	// Renew sets the lock's remaining lifetime to ttl if token still holds it.
	// Errors: EINVALID, ECONFLICT (not the owner), EUNAVAILABLE.
	Renew(ctx context.Context, tenantID, token string, ttl time.Duration) error
	// Exists reports whether anybody holds the tenant's lock. Errors: EINVALID, EUNAVAILABLE.
	Exists(ctx context.Context, tenantID string) (bool, error)
	// Holder returns the token holding the tenant's lock, "" when it is free (the orphan scan
	// releases a dead instance's lock with it, token-checked). Errors: EINVALID, EUNAVAILABLE.
	Holder(ctx context.Context, tenantID string) (string, error)
}

// ValidateLockArgs checks a tenant id, an owner id and a TTL. Errors: EINVALID.
func ValidateLockArgs(tenantID, owner string, ttl time.Duration) error {
	if err := ValidateID("tenantId", tenantID); err != nil {
		return err
	}
	if err := ValidateID("owner", owner); err != nil {
		return err
	}
	return ValidateLockTTL(ttl)
}

// ValidateLockTTL returns EINVALID for a TTL under one millisecond.
func ValidateLockTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return redstate.Errorf(redstate.EINVALID, "lock ttl must be at least 1ms, got %s", ttl)
	}
	return nil
}

// ValidateToken returns EINVALID for an empty or oversized token.
func ValidateToken(token string) error {
	if token == "" || len(token) > 2*MaxIDLength {
		return redstate.Errorf(redstate.EINVALID, "lock token must be 1..%d bytes", 2*MaxIDLength)
	}
	return nil
}

var (
	tokenPrefix  = newTokenPrefix()
	tokenCounter atomic.Uint64
)

func newTokenPrefix() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewLockToken returns a token unique to this acquisition: owner, '#', a random per-process
// prefix and a per-process counter. It costs no system call, so acquiring stays one round trip
// of pure server work.
func NewLockToken(owner string) string {
	return owner + "#" + tokenPrefix + "-" + strconv.FormatUint(tokenCounter.Add(1), 36)
}

// tokenOf reports whether token was made by NewLockToken for owner.
func tokenOf(token, owner string) bool { return strings.HasPrefix(token, owner+"#") }

// AutoRenew renews lease every `every` with ttl until ctx ends, keeping a lock held through a
// task longer than its TTL. The returned channel is closed when renewal stops; before closing
// it carries one error if the lease was lost: ECONFLICT when a renew found another owner (or
// none), or EUNAVAILABLE when renewals kept failing until the lease's local expiry passed. A
// lost lease means the holder must stop writing (its fence may already be superseded).
// every must be well under ttl (a third is a good choice).
func AutoRenew(ctx context.Context, locks TenantLocks, lease Lease, ttl, every time.Duration) <-chan error {
	out := make(chan error, 1)
	go func() {
		defer close(out)
		if every <= 0 {
			every = ttl / 3
		}
		expires := lease.ExpiresAt
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			sent := time.Now()
			err := locks.Renew(ctx, lease.Tenant, lease.Token, ttl)
			switch {
			case err == nil:
				expires = sent.Add(ttl)
			case ctx.Err() != nil:
				return
			case redstate.IsCode(err, redstate.ECONFLICT):
				out <- err
				return
			case !expires.IsZero() && time.Now().After(expires):
				out <- redstate.Wrap(redstate.EUNAVAILABLE, err, "tenant lock "+lease.Tenant+" lost: renewals failed until the lease expired")
				return
			}
		}
	}()
	return out
}

// FenceTTL is how long a tenant's fencing counter lives after its last acquisition with a
// lease of ttl: the fenced lease's counter lifetime (lease.CounterTTL: 30 days, the projection
// TTL, and at least twice the lease). Counters of tenants not locked for that long expire
// (bounding them). A fence is never below the server clock in microseconds, and a fence issued
// at time T is at most T, so a missing counter (expired, or lost) or one behind (a failover
// lost its last writes) never lets fences go back.
func FenceTTL(ttl time.Duration) time.Duration { return lease.CounterTTL(ttl) }
