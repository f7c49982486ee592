package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/redistest"
)

// OpenRedis returns the Redis store under test on client.
type OpenRedis func(t *testing.T, client redis.UniversalClient) lease.Store

// RunFailover proves that fences stay above every earlier fence across a failover to a
// replica that lags. On a master and its replica (redistest.StartReplica): a lease is taken
// and released on the master and reaches the replica; the replica is promoted (REPLICAOF NO
// ONE, what Sentinel does) while the old master, which clients still reach, issues two more
// fences, the last one held; the old master dies. The promoted replica holds the first
// fence's counter only (the two writes after it are lost) and no lease: the next acquisition
// there takes the lease and gets a fence above all three, so a store fenced by them refuses
// the old holder's writes.
func RunFailover(t *testing.T, open OpenRedis, keys lease.Keys) {
	ctx := context.Background()
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	onMaster, onReplica := open(t, master.Client(t)), open(t, replica.Client(t))
	rc := replica.Client(t)

	tok, f1 := acquire(t, onMaster, keys, time.Minute)
	release(t, onMaster, keys, tok)
	eventually(t, "the first fence to reach the replica", func() bool {
		v, err := rc.Get(ctx, keys.Fence).Int64()
		return err == nil && v == f1
	})

	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatalf("promote the replica: %v", err)
	}
	tok, f2 := acquire(t, onMaster, keys, time.Minute)
	release(t, onMaster, keys, tok)
	stale, f3 := acquire(t, onMaster, keys, time.Minute)
	if f3 <= f2 || f2 <= f1 {
		t.Fatalf("fences %d, %d, %d on the old master: want increasing", f1, f2, f3)
	}
	master.Crash(t)

	if v, err := rc.Get(ctx, keys.Fence).Int64(); err != nil || v != f1 {
		t.Fatalf("the promoted replica's counter = %d, %v; want the first fence %d (it lags the old master)", v, err, f1)
	}
	wantHolder(t, onReplica, keys, "")
	next, f4 := acquire(t, onReplica, keys, time.Minute)
	if f4 <= f3 {
		t.Fatalf("fence %d on the promoted replica: want above every fence the old master issued (%d)", f4, f3)
	}
	if held, err := onReplica.Renew(ctx, keys, stale, time.Minute); err != nil || held {
		t.Fatalf("renew by the old master's holder on the promoted replica = %v, %v; want refused", held, err)
	}
	wantHolder(t, onReplica, keys, next)
}
