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

// TestMain stops the shared servers the topology tests start.
func TestMain(m *testing.M) { redistest.Main(m) }

// IsCluster and AsCluster tell a Cluster client from the others; ForEachMaster visits each
// master once; ScanMasters reports every matching key, on every master, and no other.
func TestClusterHelpers(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			ctx := context.Background()
			client, cluster, masters := topo.Client(t), topo.Cluster, 1
			if cluster {
				masters = 3
			}
			if got := redisconn.IsCluster(client); got != cluster {
				t.Errorf("IsCluster = %v, want %v", got, cluster)
			}
			if got := redisconn.AsCluster(client); (got != nil) != cluster {
				t.Errorf("AsCluster = %v, want a cluster client: %v", got, cluster)
			}

			var mu sync.Mutex
			visits := 0
			if err := redisconn.ForEachMaster(ctx, client, func(ctx context.Context, node redis.Cmdable) error {
				mu.Lock()
				defer mu.Unlock()
				visits++
				return node.Ping(ctx).Err()
			}); err != nil {
				t.Fatal(err)
			}
			if visits != masters {
				t.Errorf("ForEachMaster visited %d nodes, want %d", visits, masters)
			}

			const n = 2500 // several SCAN replies per master
			want := map[string]bool{}
			pipe := client.Pipeline()
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
			err := redisconn.ScanMasters(ctx, client, "scan:in:*", func(_ context.Context, node redis.Cmdable, keys []string) error {
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
			if len(nodes) != masters {
				t.Errorf("keys came from %d nodes, want %d", len(nodes), masters)
			}

			stop := errors.New("stop")
			err = redisconn.ScanMasters(ctx, client, "scan:in:*", func(context.Context, redis.Cmdable, []string) error { return stop })
			if !errors.Is(err, stop) {
				t.Errorf("ScanMasters returned %v, want fn's error", err)
			}
		})
	}
}
