package indexbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	for _, topo := range []string{"standalone", "cluster"} {
		t.Run(topo, func(t *testing.T) {
			var client redis.UniversalClient
			var o redisconn.Options
			if topo == "cluster" {
				cl := redistest.StartCluster(t, 3)
				client, o = cl.Client(t), redisconn.Options{ClusterAddrs: cl.Addrs}
			} else {
				srv := redistest.StartStandalone(t)
				client, o = srv.Client(t), redisconn.Options{URL: srv.URL}
			}
			cache := redistest.NewCache(t, o)
			ms := benchtest.Check(t, client, 4, func(ctx context.Context, target bench.Target) (Measurements, error) {
				target.Cache, target.Redis = cache, o
				return Run(ctx, Options{Target: target, Rows: 2000, Batch: 64, QueryDuration: 200 * time.Millisecond})
			})
			if len(ms) != 3 || ms[0].Name != "index.apply" || ms[0].Events != 3200 || ms[0].OursStale != 0 || ms[0].Ours == 0 || ms[0].Baseline == 0 ||
				ms[1].Name != "index.query" || ms[1].Ours == 0 || !strings.HasPrefix(ms[1].ResultLine(), "RESULT index.query ours=") ||
				ms[2].Name != "index.query_cached" || ms[2].Ours == 0 {
				t.Fatalf("measurements %+v", ms)
			}
			if cache.Stats().Hits == 0 {
				t.Error("query_cached never hit the cache")
			}
		})
	}
}

// TestGenerate_StreamShape: every row inserted, half moved, a tenth deleted, versions
// increasing per client.
func TestGenerate_StreamShape(t *testing.T) {
	streams := generate(1000, 3)
	n := 0
	for _, s := range streams {
		for i := 1; i < len(s); i++ {
			if s[i].Version <= s[i-1].Version {
				t.Fatal("versions do not increase along a client's stream")
			}
		}
		for _, ch := range s {
			if ch.Op == index.OpDelete {
				n++
			}
		}
	}
	if total := len(streams[0]) + len(streams[1]) + len(streams[2]); total != 1600 || n != 100 {
		t.Fatalf("%d events, %d deletes", total, n)
	}
}
