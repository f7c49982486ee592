package redisindex_test

import (
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestStoreSuite(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			s := redisindex.New(topo.Client(t))
			indextest.RunStoreSuite(t, func(*testing.T) index.Store { return s }, indextest.Features{Cluster: topo.Cluster})
		})
	}
}

func TestProperty_ShuffledDuplicatedDeliveryConverges(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			s := redisindex.New(topo.Client(t))
			indextest.RunPropertySuite(t, func(*testing.T) index.Store { return s }, indextest.Features{Cluster: topo.Cluster})
		})
	}
}

// TestCluster_RequiresHashTag: on Cluster a table without hash-tag is refused with the reason.
func TestCluster_RequiresHashTag(t *testing.T) {
	c := redistest.SharedCluster(t).Client(t)
	if !redisconn.IsCluster(c) {
		t.Fatal("IsCluster(cluster client) = false")
	}
	_, err := index.New(redisindex.New(c), []index.TableSpec{indextest.SeedTable(false)}, index.Options{Cluster: true})
	if err == nil {
		t.Fatal("a table without hash-tag was accepted on Cluster")
	}
}
