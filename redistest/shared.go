package redistest

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// shared holds the per-binary shared servers. A start error is remembered so
// that later tests fail fast instead of each waiting for a timeout.
var shared struct {
	mu            sync.Mutex
	standalone    *Server
	standaloneErr error
	cluster       *Cluster
	clusterErr    error
	dirs          []string
}

// sharedClusterMasters is the size of the shared cluster.
const sharedClusterMasters = 3

// SharedStandalone returns a standalone server shared by all tests of the
// test binary, started on first use and flushed (FLUSHALL) on every call.
// If a test killed or stopped it, it is restarted. Tests using it must not
// run in parallel with each other unless they use disjoint keys, and their
// package should call Main from TestMain so the server is stopped at exit.
func SharedStandalone(t testing.TB) *Server {
	t.Helper()
	bin := RequireServer(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if err := runSharedStandalone(bin); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if _, err := command(shared.standalone.Addr, probeTimeout*10, "FLUSHALL"); err != nil {
		t.Fatalf("redistest: FLUSHALL on shared server %s: %v", shared.standalone.Addr, err)
	}
	return shared.standalone
}

// runSharedStandalone makes sure the shared standalone server runs: it is started on first
// use and restarted if a test killed or stopped it. The caller holds shared.mu.
func runSharedStandalone(bin string) error {
	if shared.standaloneErr != nil {
		return fmt.Errorf("shared standalone server unavailable: %w", shared.standaloneErr)
	}
	if shared.standalone == nil {
		dir, err := os.MkdirTemp("", "redistest-shared-*")
		if err == nil {
			shared.dirs = append(shared.dirs, dir)
			shared.standalone, err = startNew(bin, dir, options{})
		}
		if err != nil {
			shared.standaloneErr = err
			return fmt.Errorf("start shared standalone server: %w", err)
		}
		return nil
	}
	if !shared.standalone.alive() {
		if err := shared.standalone.restart(); err != nil {
			return fmt.Errorf("restart shared standalone server: %w", err)
		}
	}
	return nil
}

// SharedCluster returns a 3-master cluster shared by all tests of the test
// binary, started on first use and flushed (FLUSHALL on every master) on
// every call. Killed or stopped nodes are restarted. The same caveats as for
// SharedStandalone apply.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := RequireServer(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.clusterErr != nil {
		t.Fatalf("redistest: shared cluster unavailable: %v", shared.clusterErr)
	}
	if shared.cluster == nil {
		c, err := startCluster(bin, sharedClusterMasters, func(i int) (string, error) {
			dir, err := os.MkdirTemp("", fmt.Sprintf("redistest-shared-node%d-*", i))
			if err == nil {
				shared.dirs = append(shared.dirs, dir)
			}
			return dir, err
		})
		if err != nil {
			if c != nil {
				c.shutdown()
			}
			shared.clusterErr = err
			t.Fatalf("redistest: start shared cluster: %v", err)
		}
		shared.cluster = c
	} else {
		restarted := false
		for _, n := range shared.cluster.Nodes {
			if !n.alive() {
				if err := n.restart(); err != nil {
					t.Fatalf("redistest: restart shared cluster node: %v", err)
				}
				restarted = true
			}
		}
		if restarted {
			if err := waitClusterAgree(shared.cluster.Nodes, time.Now().Add(clusterTimeout)); err != nil {
				t.Fatalf("redistest: shared cluster after restart: %v", err)
			}
		}
	}
	if err := shared.cluster.flushAll(); err != nil {
		t.Fatalf("redistest: shared cluster: %v", err)
	}
	return shared.cluster
}

// Main runs the tests, stops the shared servers and removes their
// directories, then exits with the tests' exit code. Packages that use
// SharedStandalone or SharedCluster call it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	stopShared()
	os.Exit(code)
}

func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.standalone != nil {
		shared.standalone.shutdown()
		shared.standalone = nil
	}
	if shared.cluster != nil {
		shared.cluster.shutdown()
		shared.cluster = nil
	}
	removeAll(shared.dirs)
	shared.dirs = nil
}
