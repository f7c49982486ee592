//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
)

// Tenant lock load: lockContenders goroutines per tenant loop TryAcquire, use (present the
// fence to a fenced resource), Renew, use again, Release, with a short lease. Every fence
// handed out must be above every fence handed out before for its tenant, across the faults.
const (
	lockTenants    = 4
	lockContenders = 3
	lockTTL        = 2 * time.Second
	lockHold       = 10 * time.Millisecond
	lockPause      = 5 * time.Millisecond
)

// lockLoad is the tenant lock load of one phase: the fenced resource (per tenant the highest
// fence it accepted), the highest fence handed out per tenant, and every holding's interval.
type lockLoad struct {
	locks   *redisstate.Locks
	tenants []string
	phase   int
	log     opLog

	mu sync.Mutex
	// issued is the highest fence handed out per tenant.
	issued map[string]int64
	// accepted is the fenced resource: the highest fence it accepted per tenant.
	accepted map[string]int64
	// violations counts fences not above every fence handed out before for their tenant.
	violations int
	// rejected counts uses the fenced resource refused (a holder superseded by a higher fence).
	rejected int
	// held are the holdings per tenant: from the acquisition's reply to the release (or the
	// lease's local expiry, when earlier).
	held map[string][][2]time.Time
}

// newLockLoad returns the lock load of one phase on locks, with lockTenants tenants whose lock
// keys live where the faults hit.
func newLockLoad(r *run, keys executor.Keys, locks *redisstate.Locks, phase int) *lockLoad {
	return &lockLoad{
		locks: locks, phase: phase,
		tenants:  faultedIDs(r, fmt.Sprintf("lock-p%d", phase), lockTenants, keys.TenantLock),
		issued:   map[string]int64{},
		accepted: map[string]int64{},
		held:     map[string][][2]time.Time{},
	}
}

// start runs the contenders until ctx ends.
func (l *lockLoad) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, tenant := range l.tenants {
		for c := range lockContenders {
			owner := fmt.Sprintf("contender-%d", c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					l.cycle(ctx, tenant, owner)
					time.Sleep(lockPause)
				}
			}()
		}
	}
}

// cycle is one TryAcquire and, when granted, use, Renew, use, Release.
func (l *lockLoad) cycle(ctx context.Context, tenant, owner string) {
	opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	lease, ok, err := l.locks.TryAcquire(opCtx, tenant, owner, lockTTL)
	cancel()
	if ctx.Err() != nil {
		return // outcome unknown
	}
	if err != nil {
		l.log.add(err)
		return
	}
	if !ok {
		return // held by another contender
	}
	l.log.add(nil)
	start := time.Now()
	l.granted(tenant, lease.Fence)
	expires := lease.ExpiresAt
	l.use(tenant, lease.Fence)
	time.Sleep(lockHold)
	sent := time.Now()
	opCtx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
	if l.locks.Renew(opCtx, tenant, lease.Token, lockTTL) == nil {
		expires = sent.Add(lockTTL)
		l.use(tenant, lease.Fence)
		time.Sleep(lockHold)
	}
	end := time.Now()
	_ = l.locks.Release(opCtx, tenant, lease.Token) // a lost lock is not held any more either way
	cancel()
	if expires.Before(end) {
		end = expires
	}
	l.mu.Lock()
	l.held[tenant] = append(l.held[tenant], [2]time.Time{start, end})
	l.mu.Unlock()
}

// granted checks fence against every fence handed out before for tenant.
func (l *lockLoad) granted(tenant string, fence int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fence <= l.issued[tenant] {
		l.violations++
	}
	l.issued[tenant] = max(l.issued[tenant], fence)
}

// use presents fence to the fenced resource, which refuses a fence below the highest it
// accepted.
func (l *lockLoad) use(tenant string, fence int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fence < l.accepted[tenant] {
		l.rejected++
		return
	}
	l.accepted[tenant] = fence
}

// row reports the acquisitions: fences out of order (fences: the test fails on any, in every
// mode) and holdings that overlapped an earlier holding of the same tenant (concurrent:
// possible after a failover lost a lock key; that is what the fences are for).
func (l *lockLoad) row(t *testing.T, faultAt time.Time) row {
	r := newRow("executor lock")
	r.acked, r.failed = l.log.counts()
	l.mu.Lock()
	defer l.mu.Unlock()
	r.fences, r.concurrent = l.violations, 0
	for _, hs := range l.held {
		slices.SortFunc(hs, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
		var last time.Time
		for _, h := range hs {
			if h[0].Before(last) {
				r.concurrent++
			}
			last = later(last, h[1])
		}
	}
	if l.violations > 0 {
		t.Errorf("executor lock: %d fences not above every fence handed out before for their tenant", l.violations)
	}
	if l.rejected > 0 {
		t.Logf("executor lock: the fenced resource refused %d uses of superseded holders", l.rejected)
	}
	r.recovery = recovered(t, &l.log, faultAt, r.block)
	return r
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
