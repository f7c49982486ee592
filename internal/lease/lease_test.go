package lease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/internal/lease/leasetest"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var names atomic.Int64

// newKeys returns the keys of a lease no other test uses, under its own hash tag (so that on
// Cluster the leases spread over the masters), shaped like the executor's.
func newKeys() lease.Keys {
	tag := fmt.Sprintf("{lease-%d}", names.Add(1))
	return lease.Keys{Lease: "t:lock:" + tag, Fence: "t:fence:" + tag}
}

// memoryHarness is a memory store of one test on a clock of its own, which LoseCounter moves
// past the counter's lifetime.
func memoryHarness(*testing.T) leasetest.Harness {
	var offset atomic.Int64
	s := lease.NewMemory(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	return leasetest.Harness{Store: s, Keys: newKeys,
		LoseCounter: func(_ *testing.T, _ lease.Keys) {
			offset.Add(int64(lease.CounterTTL(time.Minute) + time.Second))
		}}
}

// redisHarness returns the harness of the Redis store on client (shared by the tests, each
// with keys of its own).
func redisHarness(client redis.UniversalClient, opts lease.RedisOptions) leasetest.NewHarness {
	return func(t *testing.T) leasetest.Harness {
		s, err := lease.NewRedis(client, opts)
		if err != nil {
			t.Fatal(err)
		}
		return leasetest.Harness{Store: s, Keys: newKeys,
			LoseCounter: func(t *testing.T, keys lease.Keys) {
				if err := client.Del(context.Background(), keys.Fence).Err(); err != nil {
					t.Fatal(err)
				}
			},
			SetCounter: func(t *testing.T, keys lease.Keys, v int64) {
				if err := client.Set(context.Background(), keys.Fence, v, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}}
	}
}

func TestConformance(t *testing.T) {
	t.Run("Memory", func(t *testing.T) { leasetest.Run(t, memoryHarness) })
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"Standalone", func(t *testing.T) redis.UniversalClient { return redistest.SharedStandalone(t).Client(t) }},
		{"Cluster", func(t *testing.T) redis.UniversalClient { return redistest.SharedCluster(t).Client(t) }},
		{"Sentinel", func(t *testing.T) redis.UniversalClient { return redistest.StartSentinel(t).Client(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client(t)
			t.Run("Direct", func(t *testing.T) { leasetest.Run(t, redisHarness(client, lease.RedisOptions{})) })
			t.Run("AutoPipeline", func(t *testing.T) {
				leasetest.Run(t, redisHarness(client, lease.RedisOptions{AutoPipeline: true}))
			})
		})
	}
}

func TestRedis_FenceAboveEveryEarlierAcrossAFailover(t *testing.T) {
	leasetest.RunFailover(t, func(t *testing.T, client redis.UniversalClient) lease.Store {
		s, err := lease.NewRedis(client, lease.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, newKeys())
}

// TestRedis_KeysKeepTheirFormat: the lease key holds the caller's token with the lease's TTL
// and the counter the fence in decimal with CounterTTL, refreshed at every acquisition: the
// values and lifetimes the blocks document for their keys.
func TestRedis_KeysKeepTheirFormat(t *testing.T) {
	ctx := context.Background()
	client := redistest.SharedStandalone(t).Client(t)
	s, err := lease.NewRedis(client, lease.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys := newKeys()
	for range 2 {
		tok := lease.NewToken()
		fence, ok, err := s.TryAcquire(ctx, keys, tok, time.Minute)
		if err != nil || !ok {
			t.Fatalf("acquire = %v, %v", ok, err)
		}
		if v, err := client.Get(ctx, keys.Lease).Result(); err != nil || v != tok {
			t.Fatalf("lease key holds %q, %v; want the token %q", v, err, tok)
		}
		if v, err := client.Get(ctx, keys.Fence).Result(); err != nil || v != fmt.Sprint(fence) {
			t.Fatalf("counter holds %q, %v; want the fence %d", v, err, fence)
		}
		if ttl := client.PTTL(ctx, keys.Lease).Val(); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("lease key TTL %s; want at most the lease's minute", ttl)
		}
		if ttl, want := client.PTTL(ctx, keys.Fence).Val(), lease.CounterTTL(time.Minute); ttl <= want-time.Hour || ttl > want {
			t.Fatalf("counter TTL %s; want %s", ttl, want)
		}
		if err := client.PExpire(ctx, keys.Fence, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if held, err := s.Release(ctx, keys, tok); err != nil || !held {
			t.Fatalf("release = %v, %v", held, err)
		}
	}
}

// TestRedis_ErrorCodes: a key holding something that is not a lease is EINTERNAL, a done
// context and an unreachable server EUNAVAILABLE, with the script sent nowhere.
func TestRedis_ErrorCodes(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	for _, opts := range []lease.RedisOptions{{}, {AutoPipeline: true}} {
		s, err := lease.NewRedis(client, opts)
		if err != nil {
			t.Fatal(err)
		}
		keys := newKeys()
		if err := client.HSet(ctx, keys.Lease, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Release(ctx, keys, "tok"); !redstate.IsCode(err, redstate.EINTERNAL) {
			t.Errorf("%+v: release of a lease key holding a hash = %v; want EINTERNAL", opts, err)
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		other := newKeys()
		if _, _, err := s.TryAcquire(done, other, "tok", time.Minute); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Errorf("%+v: acquire on a done context = %v; want EUNAVAILABLE", opts, err)
		}
		if n := client.Exists(ctx, other.Lease).Val(); n != 0 {
			t.Errorf("%+v: acquire on a done context took the lease", opts)
		}
	}
	down := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	s, err := lease.NewRedis(down, lease.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill(t)
	if _, _, err := s.TryAcquire(ctx, newKeys(), "tok", time.Minute); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Errorf("acquire with the server down = %v; want EUNAVAILABLE", err)
	}
	if _, err := lease.NewRedis(nil, lease.RedisOptions{}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Errorf("NewRedis(nil) = %v; want EINVALID", err)
	}
}

// TestDeleteIf: the compare-and-delete deletes only a key holding the value.
func TestDeleteIf(t *testing.T) {
	ctx := context.Background()
	client := redistest.SharedStandalone(t).Client(t)
	if err := client.Set(ctx, "t:claim", "mine", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if deleted, err := lease.DeleteIf(ctx, client, "t:claim", "theirs"); err != nil || deleted {
		t.Fatalf("DeleteIf with another value = %v, %v", deleted, err)
	}
	if deleted, err := lease.DeleteIf(ctx, client, "t:claim", "mine"); err != nil || !deleted {
		t.Fatalf("DeleteIf with the value = %v, %v", deleted, err)
	}
	if deleted, err := lease.DeleteIf(ctx, client, "t:claim", "mine"); err != nil || deleted {
		t.Fatalf("DeleteIf of a missing key = %v, %v", deleted, err)
	}
}

// TestMemory_Held lists the live leases under a prefix, as a SCAN of the lease keys does.
func TestMemory_Held(t *testing.T) {
	ctx := context.Background()
	m := lease.NewMemory(nil)
	a, b, other := lease.Keys{Lease: "lock:{a}", Fence: "fence:{a}"}, lease.Keys{Lease: "lock:{b}", Fence: "fence:{b}"}, newKeys()
	for _, k := range []lease.Keys{a, b, other} {
		if _, ok, err := m.TryAcquire(ctx, k, "tok-"+k.Lease, time.Minute); err != nil || !ok {
			t.Fatalf("acquire %s = %v, %v", k.Lease, ok, err)
		}
	}
	if _, err := m.Release(ctx, b, "tok-lock:{b}"); err != nil {
		t.Fatal(err)
	}
	if got := m.Held("lock:{"); len(got) != 1 || got["lock:{a}"] != "tok-lock:{a}" {
		t.Fatalf("Held = %v; want only lock:{a}", got)
	}
}
