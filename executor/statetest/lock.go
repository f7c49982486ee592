package statetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// NewTenantLocks returns an isolated TenantLocks with nothing held.
type NewTenantLocks func(t *testing.T) executor.TenantLocks

// RunLockSuite checks the executor.TenantLocks contract and AutoRenew, and runs a short
// RunLockSafety.
func RunLockSuite(t *testing.T, newLocks NewTenantLocks, _ Features) {
	runAll(t, []namedTest{
		{"Exclusive", func(t *testing.T) {
			l, ctx, tenant := newLocks(t), t.Context(), newID("tenant")
			a, ok, err := l.TryAcquire(ctx, tenant, "task-a", time.Minute)
			must(t, err, "acquire")
			if !ok || a.Token == "" || a.Fence <= 0 || a.Tenant != tenant || a.Owner != "task-a" || time.Until(a.ExpiresAt) <= 0 {
				t.Fatalf("first acquire: ok=%v lease=%+v", ok, a)
			}
			if _, ok, _ := l.TryAcquire(ctx, tenant, "task-b", time.Minute); ok {
				t.Fatal("second holder acquired a held lock")
			}
			if _, ok, _ := l.TryAcquire(ctx, tenant, "task-a", time.Minute); ok {
				t.Fatal("the same owner acquired its held lock again")
			}
			if held, err := l.Exists(ctx, tenant); err != nil || !held {
				t.Fatalf("Exists = %v, %v", held, err)
			}
			other, ok, err := l.TryAcquire(ctx, newID("tenant"), "task-b", time.Minute)
			if err != nil || !ok || other.Token == a.Token {
				t.Fatalf("another tenant: ok=%v err=%v", ok, err)
			}
		}},
		{"HolderIsTheLeaseToken", func(t *testing.T) {
			l, ctx, tenant := newLocks(t), t.Context(), newID("tenant")
			h, err := l.Holder(ctx, tenant)
			must(t, err, "holder of a free lock")
			if h != "" {
				t.Fatalf("holder of a free lock = %q", h)
			}
			lease, ok, err := l.TryAcquire(ctx, tenant, "task-h", time.Minute)
			must(t, err, "acquire")
			if !ok {
				t.Fatal("not acquired")
			}
			if h, err = l.Holder(ctx, tenant); err != nil || h != lease.Token {
				t.Fatalf("holder = %q, %v; want the lease token %q", h, err, lease.Token)
			}
			must(t, l.Release(ctx, tenant, h), "release with the holder's token")
			if h, _ = l.Holder(ctx, tenant); h != "" {
				t.Fatalf("holder after release = %q", h)
			}
			_, err = l.Holder(ctx, "bad tenant{")
			wantCode(t, err, redstate.EINVALID, "holder of a bad tenant id")
		}},
		{"OwnerOnlyReleaseAndRenew", func(t *testing.T) {
			l, ctx, tenant := newLocks(t), t.Context(), newID("tenant")
			a, _, err := l.TryAcquire(ctx, tenant, "task-a", time.Minute)
			must(t, err, "acquire")
			wantCode(t, l.Release(ctx, tenant, "task-a#forged"), redstate.ECONFLICT, "foreign release")
			wantCode(t, l.Renew(ctx, tenant, "task-a#forged", time.Minute), redstate.ECONFLICT, "foreign renew")
			must(t, l.Renew(ctx, tenant, a.Token, time.Minute), "owner renew")
			must(t, l.Release(ctx, tenant, a.Token), "owner release")
			wantCode(t, l.Release(ctx, tenant, a.Token), redstate.ECONFLICT, "second release")
			wantCode(t, l.Renew(ctx, tenant, a.Token, time.Minute), redstate.ECONFLICT, "renew after release")
			if held, _ := l.Exists(ctx, tenant); held {
				t.Fatal("lock exists after release")
			}
			b, ok, err := l.TryAcquire(ctx, tenant, "task-a", time.Minute)
			if err != nil || !ok {
				t.Fatalf("reacquire: %v %v", ok, err)
			}
			// The old lease's token must not touch the new lease of the same owner.
			wantCode(t, l.Release(ctx, tenant, a.Token), redstate.ECONFLICT, "stale token release")
			must(t, l.Release(ctx, tenant, b.Token), "release")
		}},
		{"FenceStrictlyIncreases", func(t *testing.T) {
			l, ctx, tenant := newLocks(t), t.Context(), newID("tenant")
			var last int64
			for i := range 200 {
				a, ok, err := l.TryAcquire(ctx, tenant, fmt.Sprintf("task-%d", i%3), time.Minute)
				if err != nil || !ok {
					t.Fatalf("cycle %d: ok=%v err=%v", i, ok, err)
				}
				if a.Fence <= last {
					t.Fatalf("cycle %d: fence %d after %d", i, a.Fence, last)
				}
				last = a.Fence
				must(t, l.Release(ctx, tenant, a.Token), "release")
			}
		}},
		{"ExpiryFreesLock", func(t *testing.T) {
			l, ctx, tenant := newLocks(t), t.Context(), newID("tenant")
			a, _, err := l.TryAcquire(ctx, tenant, "task-dead", 200*time.Millisecond)
			must(t, err, "acquire")
			var b executor.Lease
			eventually(t, "the expired lock to be acquirable", func() bool {
				var ok bool
				b, ok, err = l.TryAcquire(ctx, tenant, "task-next", time.Minute)
				must(t, err, "acquire after expiry")
				return ok
			})
			if b.Fence <= a.Fence {
				t.Fatalf("fence %d after expired holder's %d", b.Fence, a.Fence)
			}
			wantCode(t, l.Renew(ctx, tenant, a.Token, time.Minute), redstate.ECONFLICT, "renew by the expired holder")
		}},
		{"AutoRenewKeepsLockPastTTL", func(t *testing.T) {
			l, ctx, tenant := newLocks(t), t.Context(), newID("tenant")
			ttl := 300 * time.Millisecond
			a, _, err := l.TryAcquire(ctx, tenant, "task-long", ttl)
			must(t, err, "acquire")
			rctx, cancel := context.WithCancel(ctx)
			lost := executor.AutoRenew(rctx, l, a, ttl, ttl/4)
			time.Sleep(4 * ttl) // the condition here IS elapsed time: the lock must outlive its TTL
			if _, ok, _ := l.TryAcquire(ctx, tenant, "task-thief", ttl); ok {
				t.Fatal("lock was free while AutoRenew ran")
			}
			cancel()
			if err, open := <-lost; open {
				t.Fatalf("AutoRenew reported %v", err)
			}
			must(t, l.Release(ctx, tenant, a.Token), "release after renewals")
		}},
		{"AutoRenewReportsLoss", func(t *testing.T) {
			l, ctx, tenant := newLocks(t), t.Context(), newID("tenant")
			a, _, err := l.TryAcquire(ctx, tenant, "task-a", time.Minute)
			must(t, err, "acquire")
			must(t, l.Release(ctx, tenant, a.Token), "release behind AutoRenew's back")
			select {
			case err := <-executor.AutoRenew(ctx, l, a, time.Minute, 20*time.Millisecond):
				wantCode(t, err, redstate.ECONFLICT, "loss report")
			case <-time.After(waitFor):
				t.Fatal("loss not reported")
			}
		}},
		{"Invalid", func(t *testing.T) {
			l, ctx := newLocks(t), t.Context()
			for _, bad := range badIDs {
				_, _, err := l.TryAcquire(ctx, bad, "o", time.Second)
				wantCode(t, err, redstate.EINVALID, "tenant "+bad)
				_, _, err = l.TryAcquire(ctx, "t", bad, time.Second)
				wantCode(t, err, redstate.EINVALID, "owner "+bad)
				_, err = l.Exists(ctx, bad)
				wantCode(t, err, redstate.EINVALID, "Exists "+bad)
			}
			_, _, err := l.TryAcquire(ctx, "t", "o", 0)
			wantCode(t, err, redstate.EINVALID, "zero ttl")
			wantCode(t, l.Release(ctx, "t", ""), redstate.EINVALID, "empty token")
		}},
		{"SafetyShort", func(t *testing.T) { RunLockSafety(t, newLocks(t), 8, 20, 2*time.Second) }},
	})
}

// logEntry is one line of the shared holder log.
type logEntry struct {
	tenant string
	fence  int64
	enter  bool
	worker int
}

// RunLockSafety has `workers` goroutines contend for `tenants` tenants for d: each acquires a
// random tenant (no retry), appends (tenant, fence, enter) to a shared log, holds briefly,
// appends exit and releases. It then checks that per tenant the log alternates enter/exit of
// the same holder (no two holders at once) and that fences strictly increase.
func RunLockSafety(t *testing.T, locks executor.TenantLocks, workers, tenants int, d time.Duration) {
	t.Helper()
	prefix := newID("safety")
	var (
		mu  sync.Mutex
		log []logEntry
		wg  sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				tenant := fmt.Sprintf("%s-t%d", prefix, (w*7+i*13)%tenants)
				lease, ok, err := locks.TryAcquire(ctx, tenant, fmt.Sprintf("worker-%d", w), 10*time.Second)
				if err != nil || !ok {
					continue
				}
				mu.Lock()
				log = append(log, logEntry{tenant, lease.Fence, true, w})
				mu.Unlock()
				time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
				mu.Lock()
				log = append(log, logEntry{tenant, lease.Fence, false, w})
				mu.Unlock()
				if err := locks.Release(context.WithoutCancel(ctx), tenant, lease.Token); err != nil {
					t.Errorf("release %s by worker %d: %v", tenant, w, err)
				}
			}
		}()
	}
	wg.Wait()
	type state struct {
		holder    int
		fence     int64
		held      bool
		acquires  int
		lastFence int64
	}
	per := map[string]*state{}
	for i, e := range log {
		s := per[e.tenant]
		if s == nil {
			s = &state{}
			per[e.tenant] = s
		}
		if e.enter {
			if s.held {
				t.Fatalf("log line %d: worker %d entered %s (fence %d) while worker %d holds it (fence %d)", i, e.worker, e.tenant, e.fence, s.holder, s.fence)
			}
			if e.fence <= s.lastFence {
				t.Fatalf("log line %d: fence %d on %s after %d", i, e.fence, e.tenant, s.lastFence)
			}
			s.held, s.holder, s.fence, s.lastFence = true, e.worker, e.fence, e.fence
			s.acquires++
			continue
		}
		if !s.held || s.holder != e.worker || s.fence != e.fence {
			t.Fatalf("log line %d: worker %d left %s (fence %d) it did not hold", i, e.worker, e.tenant, e.fence)
		}
		s.held = false
	}
	total := 0
	for _, s := range per {
		total += s.acquires
	}
	if len(per) < tenants/2 || total < tenants {
		t.Fatalf("too little contention: %d acquisitions over %d tenants", total, len(per))
	}
	t.Logf("lock safety: %d workers, %d tenants, %d acquisitions in %s, no overlap, fences increasing", workers, len(per), total, d)
}
