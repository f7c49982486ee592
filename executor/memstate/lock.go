package memstate

import (
	"context"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.TenantLocks = (*Locks)(nil)

// Locks is the memory executor.TenantLocks: locks shared by the goroutines of one process.
// Fences start above the clock in microseconds and never decrease. Safe for concurrent use.
type Locks struct {
	now    func() time.Time
	mu     sync.Mutex
	held   map[string]entry[string] // tenant -> token
	fences map[string]int64
}

// NewLocks returns a lock table with nothing held. Only opts.Now is used.
func NewLocks(opts Options) *Locks {
	opts = opts.withDefaults(executor.DefaultLockTTL)
	return &Locks{now: opts.Now, held: map[string]entry[string]{}, fences: map[string]int64{}}
}

// TryAcquire implements executor.TenantLocks.
func (l *Locks) TryAcquire(_ context.Context, tenantID, owner string, ttl time.Duration) (executor.Lease, bool, error) {
	if err := executor.ValidateLockArgs(tenantID, owner, ttl); err != nil {
		return executor.Lease{}, false, err
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.held[tenantID]; ok && !e.expired(now) {
		return executor.Lease{}, false, nil
	}
	fence := max(l.fences[tenantID]+1, now.UnixMicro())
	l.fences[tenantID] = fence
	token := executor.NewLockToken(owner)
	exp := now.Add(ttl)
	l.held[tenantID] = entry[string]{val: token, expires: exp}
	return executor.Lease{Tenant: tenantID, Owner: owner, Token: token, Fence: fence, ExpiresAt: exp}, true, nil
}

// holder returns the live entry of tenantID (caller holds mu).
func (l *Locks) holder(tenantID string, now time.Time) (entry[string], bool) {
	e, ok := l.held[tenantID]
	if ok && e.expired(now) {
		delete(l.held, tenantID)
		return e, false
	}
	return e, ok
}

// Release implements executor.TenantLocks.
func (l *Locks) Release(_ context.Context, tenantID, token string) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.holder(tenantID, l.now()); !ok || e.val != token {
		return notOwner(tenantID)
	}
	delete(l.held, tenantID)
	return nil
}

// Renew implements executor.TenantLocks.
func (l *Locks) Renew(_ context.Context, tenantID, token string, ttl time.Duration) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	if err := executor.ValidateLockTTL(ttl); err != nil {
		return err
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.holder(tenantID, now)
	if !ok || e.val != token {
		return notOwner(tenantID)
	}
	l.held[tenantID] = entry[string]{val: token, expires: now.Add(ttl)}
	return nil
}

// Exists implements executor.TenantLocks.
func (l *Locks) Exists(_ context.Context, tenantID string) (bool, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.holder(tenantID, l.now())
	return ok, nil
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
func (l *Locks) Holder(_ context.Context, tenantID string) (string, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.holder(tenantID, l.now()); ok {
		return e.val, nil
	}
	return "", nil
}
