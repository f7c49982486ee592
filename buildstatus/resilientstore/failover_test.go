package resilientstore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// failoverBound bounds a Sentinel failover and the breaker's return on a loaded machine. The
// breaker under test waits an hour when open: only its probe can close it within this bound.
const failoverBound = 45 * time.Second

// sentinelFixture is the fail-fast store as serve builds it on a Sentinel topology: the product
// client, the Redis store, and the breaker probing with a redisconn.Prober, whose open wait is
// an hour so that only the probe can close it.
type sentinelFixture struct {
	h      *redistest.SentinelHA
	client redis.UniversalClient
	s      *Store
	keys   buildstatus.Keys
}

func newSentinelFixture(t *testing.T) *sentinelFixture {
	t.Helper()
	h := redistest.StartSentinelHA(t)
	o := redisconn.DefaultOptions()
	o.Sentinel = redisconn.Sentinel{MasterName: h.MasterName, Addrs: h.SentinelAddrs}
	client, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	keys := buildstatus.NewKeys("failover-", "")
	primary, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Close() })
	cfg := testConfig(resilience.PolicyFailFast, time.Second)
	cfg.WaitDurationInOpenState = time.Hour
	prober := redisconn.NewProber(client, o.Durability)
	t.Cleanup(func() { _ = prober.Close() })
	s, err := New(primary, nil, cfg, metrics.New(), quietLog(), resilience.WithProbe(prober.Ping))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &sentinelFixture{h: h, client: client, s: s, keys: keys}
}

// load saves builds from writers goroutines until stop is called; it counts the saves refused
// by the open breaker.
func (f *sentinelFixture) load(writers int) (stop func(), refused *atomic.Int64) {
	ctx, cancel := context.WithCancel(context.Background())
	refused = &atomic.Int64{}
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := f.s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{})
				if resilience.IsRefused(err) {
					refused.Add(1)
					time.Sleep(time.Millisecond) // refused at once: do not spin
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }, refused
}

// awaitBreaker waits until the breaker is in one of states, failing after failoverBound.
func (f *sentinelFixture) awaitBreaker(t *testing.T, what string, states ...string) {
	t.Helper()
	deadline := time.Now().Add(failoverBound)
	for {
		st := f.s.BreakerState()
		for _, want := range states {
			if st == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("breaker %s after %v, want %v: %s", st, failoverBound, states, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkOnMaster saves a build through the store and reads it from the node at addr directly.
func (f *sentinelFixture) checkOnMaster(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	id := newID()
	if _, err := f.s.Save(ctx, doc(id, nil), buildstatus.SaveOptions{}); err != nil {
		t.Fatalf("save after the failover: %v", err)
	}
	raw := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = raw.Close() }()
	if n, err := raw.Exists(ctx, f.keys.Build(id)).Result(); err != nil || n != 1 {
		t.Fatalf("build saved after the failover is not on the new master %s: %d, %v", addr, n, err)
	}
}

// TestFailFast_BreakerFollowsSentinelFailover_Kill: the master is killed under load; the
// breaker opens, and once a replica has been promoted (as a client sees it: a majority of
// sentinels name it and it answers ROLE master) the breaker closes again through its probe,
// although its open wait is an hour; saves reach the new master.
func TestFailFast_BreakerFollowsSentinelFailover_Kill(t *testing.T) {
	f := newSentinelFixture(t)
	stop, refused := f.load(4)
	defer stop()
	old := f.h.Master(t)
	old.Crash(t)
	f.awaitBreaker(t, "the master was killed under load", metrics.BreakerOpen)
	promoted := f.h.WaitFailover(t, old.Addr, failoverBound)
	f.awaitBreaker(t, "a replica was promoted; the probe should see it", metrics.BreakerClosed, metrics.BreakerHalfOpen)
	stop()
	if refused.Load() == 0 {
		t.Error("no save was refused by the open breaker")
	}
	f.checkOnMaster(t, promoted)
}

// TestFailFast_BreakerFollowsSentinelFailover_Pause: the master stalls (SIGSTOP) under load; the
// saves time out and open the breaker; once a replica has been promoted and the old master
// resumes (to be demoted), the probe closes the breaker and saves reach the new master.
func TestFailFast_BreakerFollowsSentinelFailover_Pause(t *testing.T) {
	f := newSentinelFixture(t)
	stop, _ := f.load(8) // enough writers that five time out together
	defer stop()
	old := f.h.Master(t)
	old.Pause(t)
	f.awaitBreaker(t, "the master stalled under load", metrics.BreakerOpen)
	promoted := f.h.WaitFailover(t, old.Addr, failoverBound)
	old.Resume(t)
	f.awaitBreaker(t, "a replica was promoted; the probe should see it", metrics.BreakerClosed, metrics.BreakerHalfOpen)
	stop()
	f.checkOnMaster(t, promoted)
}
