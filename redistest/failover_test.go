//go:build chaos

// The failover tests take 20–30 s each (detection, election, resync of the restarted node), so
// they run with the chaos tag (make chaos) rather than in make test.

package redistest

import (
	"context"
	"testing"
	"time"
)

// failoverTimeout bounds a promotion on a loaded machine: detection (HADownAfter or
// HANodeTimeout) plus election and reconfiguration take a few seconds.
const failoverTimeout = 45 * time.Second

func TestSentinelHA_KillMasterPromotesReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := StartSentinelHA(t)
	old := h.Master(t)
	if old != h.Nodes[0] {
		t.Fatalf("initial master %s, want %s", old.Addr, h.Nodes[0].Addr)
	}
	rdb := h.Client(t)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	old.Crash(t)
	newAddr := h.WaitFailover(t, old.Addr, failoverTimeout)
	deadline := time.Now().Add(failoverTimeout)
	for rdb.Set(ctx, "k2", "v", 0).Err() != nil { // the failover client follows the new master
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded after the failover to %s", newAddr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	old.Restart(t)
	h.WaitReplicasLinked(t, failoverTimeout)
	if m := h.Master(t); m.Addr != newAddr {
		t.Fatalf("master after restart of the old one is %s, want %s", m.Addr, newAddr)
	}
}

func TestClusterHA_KillShardMasterPromotesItsReplica(t *testing.T) {
	t.Parallel()
	c := StartClusterHA(t, 3)
	if len(c.Replicas) != 3 {
		t.Fatalf("%d replicas, want 3", len(c.Replicas))
	}
	old := c.ShardMaster(t, 1)
	if old != c.Nodes[1] {
		t.Fatalf("shard 1 master %s, want %s", old.Addr, c.Nodes[1].Addr)
	}
	old.Crash(t)
	if got := c.WaitShardFailover(t, 1, old.Addr, failoverTimeout); got != c.Replicas[1].Addr {
		t.Fatalf("shard 1 promoted %s, want its replica %s", got, c.Replicas[1].Addr)
	}
	old.Restart(t)
	c.WaitHealthy(t, failoverTimeout)
	if m := c.ShardMaster(t, 1); m != c.Replicas[1] {
		t.Fatalf("shard 1 master after the old one rejoined is %s, want %s", m.Addr, c.Replicas[1].Addr)
	}
}
