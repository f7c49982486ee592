package redistest

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterTimeout bounds how long a cluster may take to converge.
const clusterTimeout = 30 * time.Second

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// Cluster is a running Redis Cluster: masters without replicas (StartCluster) or with one
// replica each (StartClusterHA).
type Cluster struct {
	// Addrs are the node addresses, "127.0.0.1:port", in node order.
	Addrs []string
	// Nodes are the node servers; Nodes[i] serves Addrs[i] and owns the i-th
	// contiguous range of hash slots. A node can be Killed, Stopped and
	// Restarted; it rejoins from the nodes.conf in its directory.
	Nodes []*Server
	// Replicas are the replica nodes of a cluster started by StartClusterHA (Replicas[i]
	// replicated Nodes[i] at start; a failover swaps their roles); nil for StartCluster.
	Replicas []*Server
}

// StartCluster starts a Redis Cluster of the given number of masters (no
// replicas), with the 16384 hash slots split evenly in contiguous ranges. It
// returns once every node reports cluster_state:ok and all nodes agree on
// the slot map. The nodes are killed in t.Cleanup.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	bin := RequireServer(t)
	c, err := startCluster(bin, masters, func(int) (string, error) { return t.TempDir(), nil })
	if c != nil {
		t.Cleanup(c.shutdown)
	}
	if err != nil {
		t.Fatalf("redistest: start cluster: %v", err)
	}
	return c
}

// Client returns a go-redis cluster client for the cluster, closed in
// t.Cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// FlushAll runs FLUSHALL on every master.
func (c *Cluster) FlushAll(t testing.TB) {
	t.Helper()
	if err := c.flushAll(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

func (c *Cluster) flushAll() error {
	for _, addr := range c.Addrs {
		if _, err := command(addr, 10*time.Second, "FLUSHALL"); err != nil {
			return fmt.Errorf("FLUSHALL on %s: %w", addr, err)
		}
	}
	return nil
}

func (c *Cluster) shutdown() {
	for _, n := range c.all() {
		n.shutdown()
	}
}

// startCluster starts and joins the nodes, with opts applied to each. On error the returned cluster (if
// non-nil) holds the nodes started so far, for the caller to shut down.
func startCluster(bin string, masters int, mkdir func(i int) (string, error), opts ...Option) (*Cluster, error) {
	if masters < 1 {
		return nil, fmt.Errorf("need at least 1 master, got %d", masters)
	}
	c := &Cluster{}
	for i := 0; i < masters; i++ {
		dir, err := mkdir(i)
		if err != nil {
			return c, err
		}
		o := options{cluster: true}
		for _, opt := range opts {
			opt(&o)
		}
		n, err := startNew(bin, dir, o)
		if err != nil {
			return c, fmt.Errorf("node %d: %w", i, err)
		}
		c.Nodes = append(c.Nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	for i, n := range c.Nodes {
		lo, hi := i*numSlots/masters, (i+1)*numSlots/masters-1
		if _, err := command(n.Addr, probeTimeout, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return c, fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, n.Addr, err)
		}
	}
	for _, n := range c.Nodes[1:] {
		if _, err := command(c.Nodes[0].Addr, probeTimeout, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(n.port)); err != nil {
			return c, fmt.Errorf("CLUSTER MEET %s from %s: %w", n.Addr, c.Nodes[0].Addr, err)
		}
	}
	if err := waitClusterAgree(c.Nodes, time.Now().Add(clusterTimeout)); err != nil {
		return c, err
	}
	return c, nil
}

// waitClusterAgree polls until every node reports cluster_state:ok, knows all
// nodes, and returns the same complete slot map from CLUSTER SLOTS.
func waitClusterAgree(nodes []*Server, deadline time.Time) error {
	wait := 10 * time.Millisecond
	for {
		problem := clusterProblem(nodes)
		if problem == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster of %d nodes did not converge within %v: %s", len(nodes), clusterTimeout, problem)
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

// clusterProblem returns "" if the cluster is converged, or a description of
// the first disagreement found.
func clusterProblem(nodes []*Server) string {
	var want string
	for _, n := range nodes {
		info, err := commandString(n.Addr, probeTimeout, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Sprintf("%s: CLUSTER INFO: %v", n.Addr, err)
		}
		fields := parseInfo(info)
		if fields["cluster_state"] != "ok" {
			return fmt.Sprintf("%s: cluster_state:%s", n.Addr, fields["cluster_state"])
		}
		if fields["cluster_known_nodes"] != strconv.Itoa(len(nodes)) {
			return fmt.Sprintf("%s: cluster_known_nodes:%s, want %d", n.Addr, fields["cluster_known_nodes"], len(nodes))
		}
		slots, err := slotMap(n.Addr)
		if err != nil {
			return fmt.Sprintf("%s: %v", n.Addr, err)
		}
		if want == "" {
			want = slots
		} else if slots != want {
			return fmt.Sprintf("slot maps differ: %s has %q, %s has %q", nodes[0].Addr, want, n.Addr, slots)
		}
	}
	return ""
}

// waitNodeOK polls until one node reports cluster_state:ok.
func waitNodeOK(n *Server, deadline time.Time) error {
	for {
		info, err := commandString(n.Addr, probeTimeout, "CLUSTER", "INFO")
		if err == nil && parseInfo(info)["cluster_state"] == "ok" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster node %s not ok within %v (err=%v, info=%q)", n.Addr, clusterTimeout, err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// slotMap returns a canonical rendering of a node's CLUSTER SLOTS reply
// ("lo-hi@ip:port,..." sorted by lo), or an error if the ranges do not cover
// all slots exactly once.
func slotMap(addr string) (string, error) {
	v, err := command(addr, probeTimeout, "CLUSTER", "SLOTS")
	if err != nil {
		return "", fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	ranges, _ := v.([]any)
	type rng struct {
		lo, hi int64
		owner  string
	}
	var rs []rng
	for _, r := range ranges {
		e, ok := r.([]any)
		if !ok || len(e) < 3 {
			return "", fmt.Errorf("CLUSTER SLOTS: malformed entry %v", r)
		}
		lo, _ := e[0].(int64)
		hi, _ := e[1].(int64)
		master, _ := e[2].([]any)
		if len(master) < 2 {
			return "", fmt.Errorf("CLUSTER SLOTS: malformed master %v", e[2])
		}
		ip, _ := master[0].(string)
		port, _ := master[1].(int64)
		rs = append(rs, rng{lo, hi, fmt.Sprintf("%s:%d", ip, port)})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	var b strings.Builder
	next := int64(0)
	for _, r := range rs {
		if r.lo != next || r.hi < r.lo {
			return "", fmt.Errorf("CLUSTER SLOTS: gap or overlap at slot %d (range %d-%d)", next, r.lo, r.hi)
		}
		next = r.hi + 1
		fmt.Fprintf(&b, "%d-%d@%s,", r.lo, r.hi, r.owner)
	}
	if next != numSlots {
		return "", fmt.Errorf("CLUSTER SLOTS covers %d of %d slots", next, numSlots)
	}
	return b.String(), nil
}

// parseInfo parses "key:value" lines of INFO / CLUSTER INFO output.
func parseInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			m[k] = v
		}
	}
	return m
}

// removeAll removes the directories, ignoring errors (best effort cleanup
// of shared-server directories).
func removeAll(dirs []string) {
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}
