package redisconn_test

import (
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// TestProber_PingsOutsideTheClientsPool: a Prober pings a killed server (more often than the
// client's pool has connections) without counting a failed dial in the client's pool, so the
// client's first command after the restart dials at once; go-redis's pool would otherwise
// refuse to dial after PoolSize failed dials until its background dial, once a second,
// succeeds. The Prober answers as soon as the server is back, and after Close it pings
// through the client.
func TestProber_PingsOutsideTheClientsPool(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxT(t)
	o := redisconn.DefaultOptions()
	o.URL, o.PoolSize = srv.URL, 2
	client := newClient(t, o)
	p := redisconn.NewProber(client)
	t.Cleanup(func() { _ = p.Close() })
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Prober.Ping with the server up: %v", err)
	}

	srv.Kill(t)
	for range 5 {
		if err := p.Ping(ctx); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("Prober.Ping of a killed server: %v, want unavailable", err)
		}
	}
	srv.Restart(t)
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Prober.Ping after the restart: %v", err)
	}
	if err := client.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatalf("the client's first command after the restart: %v (its pool counted the probe's failed dials)", err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Prober.Ping after Close: %v", err)
	}
}
