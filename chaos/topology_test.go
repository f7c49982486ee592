//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strconv"
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
	// nodes are every data node of the topology (masters and replicas, running or not).
	nodes() []*redistest.Server
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
func (s sentinelTopo) waitHealthy(t *testing.T)   { s.h.WaitReplicasLinked(t, failoverTimeout) }
func (s sentinelTopo) nodes() []*redistest.Server { return s.h.Nodes }

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
func (c clusterTopo) nodes() []*redistest.Server {
	return append(append([]*redistest.Server(nil), c.c.Nodes...), c.c.Replicas...)
}

// clientOptions are the product client's options for topo in mode ("wait1" sets
// redis.durability.wait-replicas to 1).
func clientOptions(topo topology, mode string) redisconn.Options {
	o := topo.options()
	if mode == "wait1" {
		o.Durability.WaitReplicas = 1
	}
	return o
}

// newClient returns the product's client for topo in mode (clientOptions), closed in
// t.Cleanup.
func newClient(t *testing.T, topo topology, mode string) redis.UniversalClient {
	t.Helper()
	rdb, err := redisconn.New(clientOptions(topo, mode))
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
	// master and every node is back (killed and paused nodes rejoin as replicas). It returns
	// when it saw a replica promoted (zero when the fault promotes none).
	inject func(t *testing.T, topo topology, target *redistest.Server) (promotedAt time.Time)
}

// lagStall is how long the lagkill fault keeps the target's replicas stopped before it kills
// the master: the writes of that window exist on the master only. It stays below the
// detection timeouts, so the replicas are still candidates for promotion.
const lagStall = time.Second

// faults are the faults of one cycle, in order.
var faults = []fault{
	{"kill", func(t *testing.T, topo topology, target *redistest.Server) time.Time {
		old := target.Addr
		target.Crash(t)
		topo.waitFailover(t, old)
		promoted := time.Now()
		target.Restart(t)
		topo.waitHealthy(t)
		return promoted
	}},
	{"pause", func(t *testing.T, topo topology, target *redistest.Server) time.Time {
		old := target.Addr
		target.Pause(t)
		topo.waitFailover(t, old) // the pause outlasts down-after / node timeout
		promoted := time.Now()
		target.Resume(t)
		topo.waitHealthy(t)
		return promoted
	}},
	{"lagkill", func(t *testing.T, topo topology, target *redistest.Server) time.Time {
		// Replication lag, then a crash: the replicas stall (SIGSTOP) and the master drops
		// their links (CLIENT KILL TYPE replica: what was already sent stays in the
		// replicas' socket buffers, nothing after it reaches them) while it keeps
		// acknowledging writes; the master is killed, the replicas resume and one is
		// promoted without the writes of the stall. This is where asynchronous replication
		// loses acknowledged writes, and what redis.durability.wait-replicas prevents.
		old := target.Addr
		replicas := replicasOf(t, topo, target)
		for _, r := range replicas {
			r.Pause(t)
		}
		dropReplicaLinks(t, target)
		time.Sleep(lagStall)
		target.Crash(t)
		for _, r := range replicas {
			r.Resume(t)
		}
		topo.waitFailover(t, old)
		promoted := time.Now()
		target.Restart(t)
		topo.waitHealthy(t)
		return promoted
	}},
	{"restart", func(t *testing.T, topo topology, target *redistest.Server) time.Time {
		target.Restart(t) // SIGTERM (AOF flushed), start on the same port and directory
		topo.waitHealthy(t)
		return time.Time{}
	}},
}

// replicasOf returns the nodes of topo that replicate master, from the master's ROLE reply.
func replicasOf(t *testing.T, topo topology, master *redistest.Server) []*redistest.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer func() { _ = c.Close() }()
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) < 3 {
		t.Fatalf("ROLE on %s: %v, %v", master.Addr, role, err)
	}
	linked, _ := role[2].([]any)
	var out []*redistest.Server
	for _, r := range linked {
		fields, _ := r.([]any)
		if len(fields) < 2 {
			continue
		}
		addr := fmt.Sprintf("%v:%v", fields[0], fields[1])
		for _, n := range topo.nodes() {
			if n.Addr == addr {
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("master %s lists no known replica in ROLE: %v", master.Addr, role)
	}
	return out
}

// dropReplicaLinks closes master's replication links (CLIENT KILL TYPE replica).
func dropReplicaLinks(t *testing.T, master *redistest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer func() { _ = c.Close() }()
	if err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica on %s: %v", master.Addr, err)
	}
}

// setMinReplicas sets min-replicas-to-write n with min-replicas-max-lag 1 on every data node
// of topo (on replicas too: any of them may be promoted). A node started again reads its
// configuration file and loses the setting.
func setMinReplicas(t *testing.T, topo topology, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, node := range topo.nodes() {
		c := redis.NewClient(&redis.Options{Addr: node.Addr})
		err := c.ConfigSet(ctx, "min-replicas-to-write", strconv.Itoa(n)).Err()
		if err == nil {
			err = c.ConfigSet(ctx, "min-replicas-max-lag", "1").Err()
		}
		_ = c.Close()
		if err != nil {
			t.Fatalf("CONFIG SET min-replicas-to-write %d on %s: %v", n, node.Addr, err)
		}
	}
}
