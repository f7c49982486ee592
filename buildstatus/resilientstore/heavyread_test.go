package resilientstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redistest"
)

// TestBreaker_HeavyReadTimeoutsDoNotFailWrites: listings and batch reads that time out on a
// real redis-server (here: every client paused, so each read hits the client's read timeout)
// must not open the breaker; the next write succeeds once Redis answers again. Before, ten
// timed-out listings opened the breaker and the write was refused with 503. Write timeouts
// still count (see TestBreaker_WriteTimeoutsStillOpenTheBreaker).
func TestBreaker_HeavyReadTimeoutsDoNotFailWrites(t *testing.T) {
	s, admin := pausedRedisStore(t)
	ctx := context.Background()
	pause(t, admin, 1500*time.Millisecond)
	for i := range 10 {
		var err error
		if i%2 == 0 {
			_, err = s.List(ctx, "", 1000)
		} else {
			_, err = s.GetMany(ctx, []string{newID(), newID()})
		}
		if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("read %d while Redis is paused: %v, want a timeout (EUNAVAILABLE)", i, err)
		}
	}
	if st := s.BreakerState(); st != "closed" {
		t.Fatalf("breaker %s after timed-out heavy reads", st)
	}
	waitUnpaused(t, admin)
	if _, err := s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{}); err != nil {
		t.Fatalf("Save after the heavy reads: %v", err)
	}
}

// TestBreaker_WriteTimeoutsStillOpenTheBreaker: a hung Redis is still noticed, by the writes.
// (It also caught redisstore.Options.DirectCalls dropping a save's Redis error: a timed-out save
// was reported as "unexpected script result" EINTERNAL, which the breaker never counted.)
func TestBreaker_WriteTimeoutsStillOpenTheBreaker(t *testing.T) {
	s, admin := pausedRedisStore(t)
	ctx := context.Background()
	pause(t, admin, 1500*time.Millisecond)
	for range 10 {
		if _, err := s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{}); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("save while Redis is paused: %v, want a timeout (EUNAVAILABLE)", err)
		}
	}
	if st := s.BreakerState(); st != "open" {
		t.Fatalf("breaker %s after timed-out writes, want open", st)
	}
}

// pausedRedisStore returns a fail-fast resilient store over a real redis-server whose client
// gives up on a reply after 100 ms, and a client to administer the server.
func pausedRedisStore(t *testing.T) (*Store, *redis.Client) {
	t.Helper()
	srv := redistest.StartStandalone(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	primary, err := redisstore.New(client, redisstore.Options{Keys: buildstatus.NewKeys("heavyread-", ""), TTL: time.Hour, DirectCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Close() })
	cfg := testConfig(resilience.PolicyFailFast, time.Second)
	cfg.WaitDurationInOpenState = time.Minute
	s, err := New(primary, nil, cfg, metrics.New(), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, srv.Client(t)
}

// pause stops redis-server from serving any client command for d (CLIENT PAUSE ALL).
func pause(t *testing.T, admin *redis.Client, d time.Duration) {
	t.Helper()
	if err := admin.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
}

// waitUnpaused waits until the server answers commands again.
func waitUnpaused(t *testing.T, admin *redis.Client) {
	t.Helper()
	if err := admin.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
}
