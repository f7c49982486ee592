//go:build chaos

package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// failoverTimeout bounds one failover or one return to health on a loaded machine.
const failoverTimeout = 60 * time.Second

// topology is a replicated Redis deployment the harness injects faults into.
type topology interface {
	// name is "sentinel" or "cluster".
	name() string
	// options select the topology for redisconn.New.
	options() redisconn.Options
	// target is the master the next fault hits: the Sentinel master, or the current master of
	// the Cluster shard that holds the queue.
	target(t *testing.T) *redistest.Server
	// waitFailover waits until a node other than old serves the target's data as master.
	waitFailover(t *testing.T, old string)
	// waitHealthy waits until every node runs and every replica is linked.
	waitHealthy(t *testing.T)
}

// sentinelTopo is redistest.SentinelHA as a topology.
type sentinelTopo struct{ h *redistest.SentinelHA }

func (s sentinelTopo) name() string { return "sentinel" }
func (s sentinelTopo) options() redisconn.Options {
	o := redisconn.DefaultOptions()
	o.Sentinel = redisconn.Sentinel{MasterName: s.h.MasterName, Addrs: s.h.SentinelAddrs}
	return o
}
func (s sentinelTopo) target(t *testing.T) *redistest.Server { return s.h.Master(t) }
func (s sentinelTopo) waitFailover(t *testing.T, old string) {
	s.h.WaitFailover(t, old, failoverTimeout)
}
func (s sentinelTopo) waitHealthy(t *testing.T) { s.h.WaitReplicasLinked(t, failoverTimeout) }

// clusterTopo is a redistest.StartClusterHA cluster as a topology; faults hit shard.
type clusterTopo struct {
	c     *redistest.Cluster
	shard int
}

func (c clusterTopo) name() string { return "cluster" }
func (c clusterTopo) options() redisconn.Options {
	o := redisconn.DefaultOptions()
	o.ClusterAddrs = c.c.Addrs
	return o
}
func (c clusterTopo) target(t *testing.T) *redistest.Server { return c.c.ShardMaster(t, c.shard) }
func (c clusterTopo) waitFailover(t *testing.T, old string) {
	c.c.WaitShardFailover(t, c.shard, old, failoverTimeout)
}
func (c clusterTopo) waitHealthy(t *testing.T) { c.c.WaitHealthy(t, failoverTimeout) }

// newClient returns the product's client for topo, closed in t.Cleanup.
func newClient(t *testing.T, topo topology) redis.UniversalClient {
	t.Helper()
	rdb, err := redisconn.New(topo.options())
	if err != nil {
		t.Fatalf("redisconn.New: %v", err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	if err := redisconn.Ping(context.Background(), rdb); err != nil {
		t.Fatalf("ping %s: %v", topo.name(), err)
	}
	return rdb
}

// fault is one way of hitting the target master.
type fault struct {
	// name is "kill", "pause" or "restart".
	name string
	// inject hits the target and returns once the topology serves writes again from some
	// master and every node is back (killed and paused nodes rejoin as replicas).
	inject func(t *testing.T, topo topology, target *redistest.Server)
}

// faults are the faults of one cycle, in order.
var faults = []fault{
	{"kill", func(t *testing.T, topo topology, target *redistest.Server) {
		old := target.Addr
		target.Crash(t)
		topo.waitFailover(t, old)
		target.Restart(t)
		topo.waitHealthy(t)
	}},
	{"pause", func(t *testing.T, topo topology, target *redistest.Server) {
		old := target.Addr
		target.Pause(t)
		topo.waitFailover(t, old) // the pause outlasts down-after / node timeout
		target.Resume(t)
		topo.waitHealthy(t)
	}},
	{"restart", func(t *testing.T, topo topology, target *redistest.Server) {
		target.Restart(t) // SIGTERM (AOF flushed), start on the same port and directory
		topo.waitHealthy(t)
	}},
}
