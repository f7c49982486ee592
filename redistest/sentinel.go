package redistest

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel is a master monitored by Sentinel (no replicas).
type Sentinel struct {
	// MasterName is the name the sentinels monitor the master under.
	MasterName string
	// Addrs are the sentinel addresses, "127.0.0.1:port".
	Addrs []string
	// Master is the monitored master.
	Master *Server

	sentinels []*Server
}

// StartSentinel starts one master and one sentinel (redis-server --sentinel)
// monitoring it as "mymaster" with quorum 1. It returns when the sentinel
// answers SENTINEL get-master-addr-by-name with the master's address. All
// processes are killed in t.Cleanup.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	bin := RequireServer(t)
	master := StartStandalone(t)
	const name = "mymaster"
	o := options{sentinel: true, directives: [][2]string{
		{"sentinel", fmt.Sprintf("monitor %s 127.0.0.1 %d 1", name, master.port)},
		{"sentinel", "down-after-milliseconds " + name + " 5000"},
		{"sentinel", "failover-timeout " + name + " 10000"},
	}}
	sen, err := startNew(bin, t.TempDir(), o)
	if err != nil {
		t.Fatalf("redistest: start sentinel: %v", err)
	}
	t.Cleanup(sen.shutdown)
	if err := waitSentinelMaster(sen.Addr, name, master.Addr, time.Now().Add(readyTimeout)); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return &Sentinel{MasterName: name, Addrs: []string{sen.Addr}, Master: master, sentinels: []*Server{sen}}
}

// Client returns a go-redis failover client that finds the master through
// the sentinels, closed in t.Cleanup.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: s.Addrs})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitSentinelMaster polls until the sentinel at addr reports want as the
// address of master name.
func waitSentinelMaster(addr, name, want string, deadline time.Time) error {
	var got any
	var err error
	for {
		got, err = command(addr, probeTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
		if err == nil {
			if a, ok := got.([]any); ok && len(a) == 2 {
				ip, _ := a[0].(string)
				port, _ := a[1].(string)
				if ip+":"+port == want {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sentinel %s does not report master %s at %s (last reply %v, err %v)", addr, name, want, got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
