package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
)

// Topology is one of the shared Redis deployments a Redis backend's suites run on: the
// shared standalone server (SharedStandalone) or the shared 3-master Cluster (SharedCluster).
type Topology struct {
	// Name is the subtest name: "Standalone" or "Cluster".
	Name string
	// Cluster is true for the Cluster, whose keys a backend hash-tags.
	Cluster bool
}

// Topologies returns the standalone topology and the Cluster topology, in that order.
func Topologies() []Topology {
	return []Topology{{Name: "Standalone"}, {Name: "Cluster", Cluster: true}}
}

// Client returns a new client of the topology's shared server(s), closed in t.Cleanup. Like
// SharedStandalone and SharedCluster, it starts them on first use and flushes them.
func (tp Topology) Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	if tp.Cluster {
		return SharedCluster(t).Client(t)
	}
	return SharedStandalone(t).Client(t)
}

// Options returns the redisconn.Options that reach the topology's shared server(s), for a
// client of redisconn.New or a client-side cache (NewCache). Like Client, it flushes them.
func (tp Topology) Options(t testing.TB) redisconn.Options {
	t.Helper()
	if tp.Cluster {
		return redisconn.Options{ClusterAddrs: SharedCluster(t).Addrs}
	}
	return redisconn.Options{URL: SharedStandalone(t).URL}
}

// RunOnTopologies runs f as one subtest per topology (Topologies, by name), each with a new
// client of that topology's shared server(s). The package calls Main from TestMain, as for
// SharedStandalone.
func RunOnTopologies(t *testing.T, f func(t *testing.T, client redis.UniversalClient)) {
	t.Helper()
	for _, tp := range Topologies() {
		t.Run(tp.Name, func(t *testing.T) { f(t, tp.Client(t)) })
	}
}
