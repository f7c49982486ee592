package redisconn_test

import (
	"context"
	"errors"
	"strings"
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
	p := redisconn.NewProber(client, o.Durability)
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

// TestProber_CountsReplicasWhenWritesWaitForThem: with wait-replicas 1 the Prober answers only
// while the master has a replica online, as the writes need.
func TestProber_CountsReplicasWhenWritesWaitForThem(t *testing.T) {
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	ctx := ctxT(t)
	o := redisconn.DefaultOptions()
	o.URL = master.URL
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond}
	p := redisconn.NewProber(newClient(t, o), o.Durability)
	t.Cleanup(func() { _ = p.Close() })
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Prober.Ping with the replica online: %v", err)
	}
	replica.Kill(t)
	awaitPing(t, p, func(err error) bool {
		return errors.Is(err, redisconn.ErrNotDurable) && redstate.IsCode(err, redstate.EUNAVAILABLE)
	})
	replica.Restart(t)
	awaitPing(t, p, func(err error) bool { return err == nil })
}

// awaitPing pings until ok accepts the outcome, failing after 30 s.
func awaitPing(t *testing.T, p *redisconn.Prober, ok func(error) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := p.Ping(ctx)
		cancel()
		if ok(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prober.Ping: %v after 30s", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestProber_CountsGoodReplicasUnderMinReplicasToWrite: on a master with min-replicas-to-write
// 1 the Prober answers only while the master has a good replica, as its writes need.
func TestProber_CountsGoodReplicasUnderMinReplicasToWrite(t *testing.T) {
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	ctx := ctxT(t)
	raw := master.Client(t)
	for k, v := range map[string]string{"min-replicas-to-write": "1", "min-replicas-max-lag": "10"} {
		if err := raw.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	o := redisconn.DefaultOptions()
	o.URL = master.URL
	p := redisconn.NewProber(newClient(t, o), o.Durability)
	t.Cleanup(func() { _ = p.Close() })
	awaitPing(t, p, func(err error) bool { return err == nil })
	replica.Kill(t)
	awaitPing(t, p, func(err error) bool { return redstate.IsCode(err, redstate.EUNAVAILABLE) })
	if err := raw.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Fatalf("write while the Prober fails: %v, want NOREPLICAS", err)
	}
	replica.Restart(t)
	awaitPing(t, p, func(err error) bool { return err == nil })
}
