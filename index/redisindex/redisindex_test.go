package redisindex_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// topologies are the shared standalone server and the shared 3-master cluster.
var topologies = []struct {
	name     string
	features indextest.Features
	client   func(t *testing.T) redis.UniversalClient
}{
	{"Standalone", indextest.Features{}, func(t *testing.T) redis.UniversalClient { return redistest.SharedStandalone(t).Client(t) }},
	{"Cluster", indextest.Features{Cluster: true}, func(t *testing.T) redis.UniversalClient { return redistest.SharedCluster(t).Client(t) }},
}

func TestStoreSuite(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			s := redisindex.New(topo.client(t))
			indextest.RunStoreSuite(t, func(*testing.T) index.Store { return s }, topo.features)
		})
	}
}

func TestProperty_ShuffledDuplicatedDeliveryConverges(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			s := redisindex.New(topo.client(t))
			indextest.RunPropertySuite(t, func(*testing.T) index.Store { return s }, topo.features)
		})
	}
}

// TestCluster_RequiresHashTag: on Cluster a table without hash-tag is refused with the reason.
func TestCluster_RequiresHashTag(t *testing.T) {
	c := redistest.SharedCluster(t).Client(t)
	if !redisindex.IsCluster(c) {
		t.Fatal("IsCluster(cluster client) = false")
	}
	_, err := index.New(redisindex.New(c), []index.TableSpec{indextest.SeedTable(false)}, index.Options{Cluster: true})
	if err == nil {
		t.Fatal("a table without hash-tag was accepted on Cluster")
	}
}
