package resilientstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redistest"
)

// TestFallback_RealRedisKilledAndRestarted: writes made while redis-server is dead are accepted
// by the fallback and written back once it restarts, readable through a raw client.
func TestFallback_RealRedisKilledAndRestarted(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	// Fail fast on a dead server: go-redis's defaults (3 retries x 5 dial attempts) would make
	// each call take about 1.5 s before it reports the outage.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	keys := buildstatus.NewKeys("resilient-test-", "")
	primary, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Close() })
	fb := memstore.New(memstore.Options{TTL: time.Hour})
	t.Cleanup(func() { _ = fb.Close() })
	cfg := testConfig(resilience.PolicyFallback, 20*time.Millisecond)
	cfg.WaitDurationInOpenState = 100 * time.Millisecond
	s, err := New(primary, fb, cfg, metrics.New(), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()

	srv.Kill(t)
	ids := []string{newID(), newID(), newID()}
	acked := map[string]*buildstatus.Build{}
	for _, id := range ids {
		now := time.Now()
		b, err := s.Save(ctx, doc(id, &now), buildstatus.SaveOptions{})
		if err != nil {
			t.Fatalf("Save with Redis killed = %v, want fallback success", err)
		}
		acked[id] = b
	}
	if n := s.Pending(); n != len(ids) {
		t.Fatalf("Pending = %d, want %d", n, len(ids))
	}
	if b, err := s.Get(ctx, ids[0]); err != nil || b.ETag() != acked[ids[0]].ETag() {
		t.Fatalf("read-your-writes with Redis killed: %v, %v", b, err)
	}

	srv.Restart(t)
	eventually(t, "write-back to the restarted Redis", func() bool { return s.Pending() == 0 })
	for _, id := range ids {
		raw, err := client.Get(ctx, keys.Build(id)).Bytes()
		if err != nil {
			t.Fatalf("raw GET %s: %v", keys.Build(id), err)
		}
		if buildstatus.ETagOf(raw) != acked[id].ETag() {
			t.Fatalf("Redis holds %s\nwant %s", raw, acked[id].JSON)
		}
		if ttl := client.TTL(ctx, keys.Build(id)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("TTL of written-back build = %s, want (0, 1h]", ttl)
		}
	}
}
