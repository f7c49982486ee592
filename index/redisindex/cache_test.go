package redisindex_test

import (
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// newCachedStore returns a store whose queries read through a new client-side cache.
func newCachedStore(t *testing.T, o redisconn.Options) (*redisindex.Store, *redisconn.Cache) {
	t.Helper()
	client, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	cache := redistest.NewCache(t, o)
	return redisindex.NewCached(client, cache), cache
}

// The whole contract, queries right after writes included, holds with queries cached: Apply
// and Remove end with the cache's barrier.
func TestStoreSuite_ClientCache(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			s, cache := newCachedStore(t, topo.Options(t))
			t.Cleanup(func() {
				if st := cache.Stats(); st.Hits == 0 {
					t.Errorf("the suite never hit the cache: %+v", st)
				}
			})
			indextest.RunStoreSuite(t, func(*testing.T) index.Store { return s }, indextest.Features{Cluster: topo.Cluster})
		})
	}
}

func TestProperty_ShuffledDuplicatedDeliveryConverges_ClientCache(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			s, _ := newCachedStore(t, topo.Options(t))
			indextest.RunPropertySuite(t, func(*testing.T) index.Store { return s }, indextest.Features{Cluster: topo.Cluster})
		})
	}
}
