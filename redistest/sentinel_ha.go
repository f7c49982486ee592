package redistest

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timing of the SentinelHA topology: short enough that a failover finishes in a few seconds,
// long enough that a loaded 2-core machine does not see spurious failovers.
const (
	// HADownAfter is the sentinels' down-after-milliseconds: how long the master must stay
	// silent before a sentinel considers it down.
	HADownAfter = 2 * time.Second
	// haFailoverTimeout is the sentinels' failover-timeout.
	haFailoverTimeout = 6 * time.Second
	// haQuorum is how many sentinels must agree that the master is down.
	haQuorum = 2
)

// SentinelHA is a replicated topology managed by Sentinel: one master, two replicas and three
// sentinels (quorum 2) on loopback ports. Which node is master changes with failovers; ask
// Master or MasterAddr.
type SentinelHA struct {
	// MasterName is the name the sentinels monitor the master under.
	MasterName string
	// SentinelAddrs are the sentinel addresses, "127.0.0.1:port".
	SentinelAddrs []string
	// Nodes are the data nodes; Nodes[0] is the initial master, the others its replicas.
	Nodes []*Server
	// Sentinels are the sentinel processes.
	Sentinels []*Server
}

// StartSentinelHA starts the master, its two replicas and three sentinels monitoring it as
// "mymaster" with quorum 2, down-after-milliseconds HADownAfter and a short failover-timeout.
// It returns when both replicas are in sync and every sentinel knows both replicas and the
// two other sentinels (so a failover can be authorized). All processes are killed in
// t.Cleanup. opts apply to the three data nodes (for example WithAppendOnly).
func StartSentinelHA(t testing.TB, opts ...Option) *SentinelHA {
	t.Helper()
	bin := RequireServer(t)
	const name = "mymaster"
	h := &SentinelHA{MasterName: name}
	t.Cleanup(h.shutdown)
	var base options
	for _, opt := range opts {
		opt(&base)
	}
	master, err := startNew(bin, t.TempDir(), base)
	if err != nil {
		t.Fatalf("redistest: start master: %v", err)
	}
	h.Nodes = append(h.Nodes, master)
	for i := 0; i < 2; i++ {
		o := base
		o.directives = append(append([][2]string(nil), base.directives...), [2]string{"replicaof", fmt.Sprintf("127.0.0.1 %d", master.port)})
		r, err := startNew(bin, t.TempDir(), o)
		if err != nil {
			t.Fatalf("redistest: start replica %d: %v", i, err)
		}
		h.Nodes = append(h.Nodes, r)
	}
	deadline := time.Now().Add(clusterTimeout)
	for _, r := range h.Nodes[1:] {
		if err := waitReplicaLinked(r.Addr, deadline); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
	for i := 0; i < 3; i++ {
		o := options{sentinel: true, directives: [][2]string{
			{"sentinel", fmt.Sprintf("monitor %s 127.0.0.1 %d %d", name, master.port, haQuorum)},
			{"sentinel", fmt.Sprintf("down-after-milliseconds %s %d", name, HADownAfter.Milliseconds())},
			{"sentinel", fmt.Sprintf("failover-timeout %s %d", name, haFailoverTimeout.Milliseconds())},
			{"sentinel", "parallel-syncs " + name + " 2"},
		}}
		sen, err := startNew(bin, t.TempDir(), o)
		if err != nil {
			t.Fatalf("redistest: start sentinel %d: %v", i, err)
		}
		h.Sentinels = append(h.Sentinels, sen)
		h.SentinelAddrs = append(h.SentinelAddrs, sen.Addr)
	}
	for _, sen := range h.Sentinels {
		if err := waitSentinelPeers(sen.Addr, name, deadline); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
	return h
}

// Client returns a go-redis failover client that finds the master through the sentinels,
// closed in t.Cleanup.
func (h *SentinelHA) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: h.MasterName, SentinelAddrs: h.SentinelAddrs})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// MasterAddr returns the master address the first answering sentinel reports.
func (h *SentinelHA) MasterAddr() (string, error) {
	var last error
	for _, a := range h.SentinelAddrs {
		v, err := command(a, probeTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", h.MasterName)
		if err != nil {
			last = err
			continue
		}
		if r, ok := v.([]any); ok && len(r) == 2 {
			ip, _ := r[0].(string)
			port, _ := r[1].(string)
			return ip + ":" + port, nil
		}
		last = fmt.Errorf("sentinel %s: unexpected reply %v", a, v)
	}
	return "", fmt.Errorf("no sentinel reports the master: %v", last)
}

// Master returns the data node the sentinels currently report as master.
func (h *SentinelHA) Master(t testing.TB) *Server {
	t.Helper()
	addr, err := h.MasterAddr()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	for _, n := range h.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	t.Fatalf("redistest: sentinels report master %s, which is none of the nodes", addr)
	return nil
}

// WaitFailover polls until a majority of sentinels report a master other than old and that
// node answers ROLE as master, and returns its address; it fails the test after timeout.
func (h *SentinelHA) WaitFailover(t testing.TB, old string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		agree := map[string]int{}
		for _, a := range h.SentinelAddrs {
			v, err := command(a, probeTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", h.MasterName)
			if r, ok := v.([]any); err == nil && ok && len(r) == 2 {
				ip, _ := r[0].(string)
				port, _ := r[1].(string)
				agree[ip+":"+port]++
			}
		}
		for addr, n := range agree {
			if addr != old && n >= haQuorum && isMaster(addr) {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: no failover away from %s within %v (sentinels report %v)", old, timeout, agree)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitReplicasLinked polls until every data node other than the current master is running
// and reports master_link_status:up (a node that was killed and restarted has been turned
// into a replica and has synced); it fails the test after timeout.
func (h *SentinelHA) WaitReplicasLinked(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	master := h.Master(t)
	for _, n := range h.Nodes {
		if n == master {
			continue
		}
		if err := waitReplicaLinked(n.Addr, deadline); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
}

func (h *SentinelHA) shutdown() {
	for _, s := range h.Sentinels {
		s.shutdown()
	}
	for _, n := range h.Nodes {
		n.shutdown()
	}
}

// isMaster reports whether the server at addr answers ROLE with "master".
func isMaster(addr string) bool {
	v, err := command(addr, probeTimeout, "ROLE")
	r, ok := v.([]any)
	if err != nil || !ok || len(r) == 0 {
		return false
	}
	role, _ := r[0].(string)
	return role == "master"
}

// waitReplicaLinked polls until the server at addr reports master_link_status:up.
func waitReplicaLinked(addr string, deadline time.Time) error {
	for {
		info, err := commandString(addr, probeTimeout, "INFO", "replication")
		if err == nil && parseInfo(info)["master_link_status"] == "up" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s not linked to its master (err=%v, info=%q)", addr, err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSentinelPeers polls until the sentinel at addr knows two replicas and two other
// sentinels of master name.
func waitSentinelPeers(addr, name string, deadline time.Time) error {
	for {
		v, err := command(addr, probeTimeout, "SENTINEL", "MASTER", name)
		fields := map[string]string{}
		if r, ok := v.([]any); err == nil && ok {
			for i := 0; i+1 < len(r); i += 2 {
				k, _ := r[i].(string)
				val, _ := r[i+1].(string)
				fields[k] = val
			}
		}
		if fields["num-slaves"] == "2" && fields["num-other-sentinels"] == "2" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sentinel %s: master %s has num-slaves=%q num-other-sentinels=%q (err %v), want 2 and 2",
				addr, name, fields["num-slaves"], fields["num-other-sentinels"], err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
