package redisstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// TestLocks_DirectOnADurableClientWaitForTheReplica: with DirectLocks (what serve sets when
// redis.durability.wait-replicas is on), and without it on a client made with durability on
// (Locks sees it: redisconn.WaitsForReplicas; the streamed default lost the WAIT's connection
// and failed every lock write under make chaos's wait1 mode), every lock write through a
// redisconn client with durability is followed by its own WAIT and is on the replica when the
// call returns.
func TestLocks_DirectOnADurableClientWaitForTheReplica(t *testing.T) {
	for name, direct := range map[string]bool{"DirectLocks": true, "Default": false} {
		t.Run(name, func(t *testing.T) { locksWaitForTheReplica(t, direct) })
	}
}

func locksWaitForTheReplica(t *testing.T, direct bool) {
	ctx := context.Background()
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	c := redisconn.DefaultOptions()
	c.URL = master.URL
	c.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 2 * time.Second}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	client, err := redisconn.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	o := opts(0)
	o.DirectLocks = direct
	locks := must(redisstate.NewLocks(client, o))(t)
	onReplica, onMaster := replica.Client(t), master.Client(t)
	// Load the scripts, so that no NOSCRIPT answer adds an EVAL (and its WAIT) below.
	warm, _, err := locks.TryAcquire(ctx, "tenant-warm", "task", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := locks.Renew(ctx, "tenant-warm", warm.Token, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := locks.Release(ctx, "tenant-warm", warm.Token); err != nil {
		t.Fatal(err)
	}
	if err := onMaster.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	l, ok, err := locks.TryAcquire(ctx, "tenant-durable", "task", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
	if got, err := onReplica.Get(ctx, o.Keys.TenantLock("tenant-durable")).Result(); err != nil || got != l.Token {
		t.Fatalf("replica holds %q, %v right after the acquire returned; want the token", got, err)
	}
	if err := locks.Renew(ctx, "tenant-durable", l.Token, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl, err := onReplica.PTTL(ctx, o.Keys.TenantLock("tenant-durable")).Result(); err != nil || ttl <= time.Minute {
		t.Fatalf("replica's lock TTL %s, %v right after the renew returned; want above 1m", ttl, err)
	}
	if err := locks.Release(ctx, "tenant-durable", l.Token); err != nil {
		t.Fatal(err)
	}
	if n, err := onReplica.Exists(ctx, o.Keys.TenantLock("tenant-durable")).Result(); err != nil || n != 0 {
		t.Fatalf("replica still holds the lock right after the release returned: %d, %v", n, err)
	}
	if w := redistest.CommandCalls(t, onMaster, "wait"); w != 3 {
		t.Errorf("WAIT ran %d times for 3 lock writes", w)
	}
}
