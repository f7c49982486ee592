package redistest

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// HANodeTimeout is the cluster-node-timeout of StartClusterHA: how long a master must be
// unreachable before its replica is promoted.
const HANodeTimeout = 2 * time.Second

// StartClusterHA starts a Redis Cluster of the given number of masters, each with one
// replica: Nodes[i] owns the i-th contiguous slot range and Replicas[i] replicates it. The
// nodes run with cluster-node-timeout HANodeTimeout and cluster-replica-validity-factor 0 (a
// replica may always take over). It returns when every node agrees on the slot map, every
// replica is in sync and every node lists each replica under its master. opts apply to every
// node (for example WithAppendOnly). The nodes are killed in t.Cleanup.
func StartClusterHA(t testing.TB, masters int, opts ...Option) *Cluster {
	t.Helper()
	bin := RequireServer(t)
	ha := append([]Option{
		WithConfig("cluster-node-timeout", strconv.Itoa(int(HANodeTimeout.Milliseconds()))),
		WithConfig("cluster-replica-validity-factor", "0"),
	}, opts...)
	c, err := startCluster(bin, masters, func(int) (string, error) { return t.TempDir(), nil }, ha...)
	if c != nil {
		t.Cleanup(c.shutdown)
	}
	if err != nil {
		t.Fatalf("redistest: start cluster: %v", err)
	}
	var o options
	for _, opt := range ha {
		opt(&o)
	}
	o.cluster = true
	for i := 0; i < masters; i++ {
		r, err := startNew(bin, t.TempDir(), o)
		if err != nil {
			t.Fatalf("redistest: start replica %d: %v", i, err)
		}
		c.Replicas = append(c.Replicas, r)
		if _, err := command(c.Nodes[0].Addr, probeTimeout, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(r.port)); err != nil {
			t.Fatalf("redistest: CLUSTER MEET %s: %v", r.Addr, err)
		}
	}
	all := append(append([]*Server(nil), c.Nodes...), c.Replicas...)
	deadline := time.Now().Add(clusterTimeout)
	if err := waitClusterAgree(all, deadline); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	for i, r := range c.Replicas {
		id, err := commandString(c.Nodes[i].Addr, probeTimeout, "CLUSTER", "MYID")
		if err != nil {
			t.Fatalf("redistest: CLUSTER MYID on %s: %v", c.Nodes[i].Addr, err)
		}
		if _, err := command(r.Addr, probeTimeout, "CLUSTER", "REPLICATE", id); err != nil {
			t.Fatalf("redistest: CLUSTER REPLICATE on %s: %v", r.Addr, err)
		}
	}
	for _, r := range c.Replicas {
		if err := waitReplicaLinked(r.Addr, deadline); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
	if err := waitReplicasListed(all, masters, deadline); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// ShardMaster returns the node that currently serves shard i (the slot range Nodes[i] owned
// at start) as master, according to the first live node that answers CLUSTER SLOTS.
func (c *Cluster) ShardMaster(t testing.TB, i int) *Server {
	t.Helper()
	addr, err := c.shardMasterAddr(i)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	for _, n := range c.all() {
		if n.Addr == addr {
			return n
		}
	}
	t.Fatalf("redistest: shard %d is served by %s, which is none of the nodes", i, addr)
	return nil
}

// WaitShardFailover polls until every live node reports a master other than old for shard i,
// that node answers ROLE as master and every live node reports cluster_state:ok; it returns
// the new master's address and fails the test after timeout.
func (c *Cluster) WaitShardFailover(t testing.TB, i int, old string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		addr, err := c.shardMasterAddr(i)
		if err == nil && addr != old && isMaster(addr) && c.liveAgree() == "" {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: shard %d: no failover away from %s within %v (now %s, %v; %s)", i, old, timeout, addr, err, c.liveAgree())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitHealthy polls until every node runs, every live node agrees on the slot map with
// cluster_state:ok, and every node that is not a master reports its replication link up; it
// fails the test after timeout.
func (c *Cluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	if err := waitClusterAgree(c.all(), deadline); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	for _, n := range c.all() {
		if isMaster(n.Addr) {
			continue
		}
		if err := waitReplicaLinked(n.Addr, deadline); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
}

// all returns the masters and replicas the cluster was started with.
func (c *Cluster) all() []*Server {
	return append(append([]*Server(nil), c.Nodes...), c.Replicas...)
}

// liveAgree returns "" when every running, answering node reports cluster_state:ok and the
// same slot map, else a description of the first problem.
func (c *Cluster) liveAgree() string {
	var live []*Server
	for _, n := range c.all() {
		if n.alive() {
			live = append(live, n)
		}
	}
	var want string
	for _, n := range live {
		info, err := commandString(n.Addr, probeTimeout, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Sprintf("%s: CLUSTER INFO: %v", n.Addr, err)
		}
		if st := parseInfo(info)["cluster_state"]; st != "ok" {
			return fmt.Sprintf("%s: cluster_state:%s", n.Addr, st)
		}
		slots, err := slotMap(n.Addr)
		if err != nil {
			return fmt.Sprintf("%s: %v", n.Addr, err)
		}
		if want == "" {
			want = slots
		} else if slots != want {
			return fmt.Sprintf("slot maps differ (%s: %q)", n.Addr, slots)
		}
	}
	return ""
}

// shardMasterAddr returns the master address of the slot range that starts shard i, from
// the first answering node.
func (c *Cluster) shardMasterAddr(i int) (string, error) {
	slot := int64(i * numSlots / len(c.Nodes))
	var last error
	for _, n := range c.all() {
		if !n.alive() {
			continue
		}
		owner, err := slotOwner(n.Addr, slot)
		if err == nil {
			return owner, nil
		}
		last = err
	}
	return "", fmt.Errorf("no node reports the master of slot %d: %v", slot, last)
}

// slotOwner returns the master address the node at addr reports for slot.
func slotOwner(addr string, slot int64) (string, error) {
	v, err := command(addr, probeTimeout, "CLUSTER", "SLOTS")
	if err != nil {
		return "", err
	}
	ranges, _ := v.([]any)
	for _, r := range ranges {
		e, ok := r.([]any)
		if !ok || len(e) < 3 {
			continue
		}
		lo, _ := e[0].(int64)
		hi, _ := e[1].(int64)
		m, _ := e[2].([]any)
		if slot < lo || slot > hi || len(m) < 2 {
			continue
		}
		ip, _ := m[0].(string)
		p, _ := m[1].(int64)
		return fmt.Sprintf("%s:%d", ip, p), nil
	}
	return "", fmt.Errorf("%s: slot %d not served", addr, slot)
}

// waitReplicasListed polls until every node's CLUSTER SLOTS lists at least one replica for
// each of the masters ranges.
func waitReplicasListed(nodes []*Server, masters int, deadline time.Time) error {
	for {
		problem := ""
		for _, n := range nodes {
			v, err := command(n.Addr, probeTimeout, "CLUSTER", "SLOTS")
			ranges, _ := v.([]any)
			if err != nil || len(ranges) != masters {
				problem = fmt.Sprintf("%s: %d slot ranges (err %v)", n.Addr, len(ranges), err)
				break
			}
			for _, r := range ranges {
				if e, ok := r.([]any); !ok || len(e) < 4 {
					problem = fmt.Sprintf("%s: a slot range without replica: %v", n.Addr, r)
					break
				}
			}
			if problem != "" {
				break
			}
		}
		if problem == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster replicas not listed within %v: %s", clusterTimeout, problem)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
