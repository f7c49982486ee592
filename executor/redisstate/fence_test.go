package redisstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/redistest"
)

// TestLocks_FenceAboveEveryEarlierAfterTheCounterWentBack: a failover that loses the last
// INCRs of a tenant's fence counter (the promoted replica holds the counter, behind) must not
// make the next acquisition reuse a fence already handed out.
func TestLocks_FenceAboveEveryEarlierAfterTheCounterWentBack(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		o := opts(0)
		locks := must(redisstate.NewLocks(client, o))(t)
		const tenant = "tenant-fence"
		var fences []int64
		for range 2 {
			l, ok, err := locks.TryAcquire(ctx, tenant, "task-a", executor.DefaultLockTTL)
			if err != nil || !ok {
				t.Fatalf("acquire = %v, %v", ok, err)
			}
			if err := locks.Release(ctx, tenant, l.Token); err != nil {
				t.Fatal(err)
			}
			fences = append(fences, l.Fence)
		}
		f1, f2 := fences[0], fences[1]
		if f2 <= f1 {
			t.Fatalf("fences %d then %d: want increasing", f1, f2)
		}
		// The failover lost the second acquisition's INCR: the counter is back at f1.
		if err := client.Set(ctx, o.Keys.TenantFence(tenant), f1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		l, ok, err := locks.TryAcquire(ctx, tenant, "task-b", executor.DefaultLockTTL)
		if err != nil || !ok {
			t.Fatalf("acquire after the counter went back = %v, %v", ok, err)
		}
		if l.Fence <= f2 {
			t.Fatalf("fence %d after the counter went back to %d: want above every earlier fence (%d)", l.Fence, f1, f2)
		}
	})
}

// TestLocks_FenceAboveACounterAheadOfTheClock: when the counter is ahead of the server clock
// (a master whose clock ran ahead issued it), the fence is the counter plus one, stored back,
// so fences still increase.
func TestLocks_FenceAboveACounterAheadOfTheClock(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		o := opts(0)
		locks := must(redisstate.NewLocks(client, o))(t)
		const tenant = "tenant-ahead"
		const ahead = int64(5e15) // µs in the year 2128, below 2^53 (Lua numbers are doubles)
		if err := client.Set(ctx, o.Keys.TenantFence(tenant), ahead, 0).Err(); err != nil {
			t.Fatal(err)
		}
		for want := ahead + 1; want <= ahead+2; want++ {
			l, ok, err := locks.TryAcquire(ctx, tenant, "task", executor.DefaultLockTTL)
			if err != nil || !ok {
				t.Fatalf("acquire = %v, %v", ok, err)
			}
			if l.Fence != want {
				t.Fatalf("fence = %d, want %d (the counter plus one)", l.Fence, want)
			}
			if got, err := client.Get(ctx, o.Keys.TenantFence(tenant)).Int64(); err != nil || got != want {
				t.Fatalf("counter = %d, %v; want %d", got, err, want)
			}
			if err := locks.Release(ctx, tenant, l.Token); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestLocks_FenceCounterLivesFenceTTL: the tenant's fence counter lives executor.FenceTTL of
// the lease, the lifetime lease.CounterTTL gives every fence counter, refreshed per acquire.
func TestLocks_FenceCounterLivesFenceTTL(t *testing.T) {
	for _, ttl := range []time.Duration{time.Millisecond, executor.DefaultLockTTL, 20 * 24 * time.Hour} {
		if got, want := lease.CounterTTL(ttl), executor.FenceTTL(ttl); got != want {
			t.Errorf("lease %s: the counter lives %s; executor.FenceTTL says %s", ttl, got, want)
		}
	}
}
