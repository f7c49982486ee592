package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// clusterHelperTopologies are a standalone server and a 3-master Cluster of this test's own, with
// the number of masters of each.
func clusterHelperTopologies(t *testing.T) []struct {
	name    string
	client  redis.UniversalClient
	masters int
} {
	return []struct {
		name    string
		client  redis.UniversalClient
		masters int
	}{
		{"Standalone", redistest.StartStandalone(t).Client(t), 1},
		{"Cluster", redistest.StartCluster(t, 3).Client(t), 3},
	}
}

// IsCluster and AsCluster tell a Cluster client from the others; ForEachMaster visits each
// master once; ScanMasters reports every matching key, on every master, and no other.
func TestClusterHelpers(t *testing.T) {
	for _, topo := range clusterHelperTopologies(t) {
		t.Run(topo.name, func(t *testing.T) {
			ctx := context.Background()
			cluster := topo.masters > 1
			if got := redisconn.IsCluster(topo.client); got != cluster {
				t.Errorf("IsCluster = %v, want %v", got, cluster)
			}
			if got := redisconn.AsCluster(topo.client); (got != nil) != cluster {
				t.Errorf("AsCluster = %v, want a cluster client: %v", got, cluster)
			}

			var mu sync.Mutex
			visits := 0
			if err := redisconn.ForEachMaster(ctx, topo.client, func(ctx context.Context, node redis.Cmdable) error {
				mu.Lock()
				defer mu.Unlock()
				visits++
				return node.Ping(ctx).Err()
			}); err != nil {
				t.Fatal(err)
			}
			if visits != topo.masters {
				t.Errorf("ForEachMaster visited %d nodes, want %d", visits, topo.masters)
			}

			const n = 2500 // several SCAN replies per master
			want := map[string]bool{}
			pipe := topo.client.Pipeline()
			for i := range n {
				k := fmt.Sprintf("scan:in:%d", i)
				want[k] = true
				pipe.Set(ctx, k, "v", 0)
				pipe.Set(ctx, fmt.Sprintf("scan:out:%d", i), "v", 0)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			nodes := map[redis.Cmdable]bool{}
			err := redisconn.ScanMasters(ctx, topo.client, "scan:in:*", func(_ context.Context, node redis.Cmdable, keys []string) error {
				mu.Lock()
				defer mu.Unlock()
				nodes[node] = true
				for _, k := range keys {
					got[k] = true
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("ScanMasters found %d keys, want %d", len(got), len(want))
			}
			for k := range got {
				if !want[k] {
					t.Errorf("ScanMasters reported %q, which does not match the pattern", k)
				}
			}
			if len(nodes) != topo.masters {
				t.Errorf("keys came from %d nodes, want %d", len(nodes), topo.masters)
			}

			stop := errors.New("stop")
			err = redisconn.ScanMasters(ctx, topo.client, "scan:in:*", func(context.Context, redis.Cmdable, []string) error { return stop })
			if !errors.Is(err, stop) {
				t.Errorf("ScanMasters returned %v, want fn's error", err)
			}
		})
	}
}
