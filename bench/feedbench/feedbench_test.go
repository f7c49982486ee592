package feedbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	res := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (Result, error) {
		return Run(ctx, Options{Target: target, Followers: 3000, Batch: 500, Duration: 200 * time.Millisecond})
	})
	lines := res.Lines()
	if res.FanOutOurs == 0 || res.FanOutBaseline == 0 || res.FirstOurs == 0 || res.FirstBaseline == 0 || res.Read.Ours.Ops == 0 || res.Page.Ours.Ops == 0 || res.BytesPerEntry <= 0 ||
		len(lines) != 5 || !strings.HasPrefix(lines[0], "RESULT feed.fanout ours=") || !strings.HasPrefix(lines[1], "RESULT feed.fanout_first ours=") {
		t.Fatalf("result %+v %v", res, lines)
	}
}

// TestRun_SmokeWithClientCache: page_cached is measured and printed before the memory line.
func TestRun_SmokeWithClientCache(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	srv := redistest.StartStandalone(t)
	o := redisconn.Options{URL: srv.URL}
	cache := redistest.NewCache(t, o)
	res := benchtest.Check(t, srv.Client(t), 4, func(ctx context.Context, target bench.Target) (Result, error) {
		target.Cache, target.Redis = cache, o
		return Run(ctx, Options{Target: target, Followers: 3000, Batch: 500, Duration: 200 * time.Millisecond})
	})
	lines := res.Lines()
	if res.PageCached == nil || res.PageCached.Ours.Ops == 0 || len(lines) != 6 || !strings.HasPrefix(lines[4], "RESULT feed.page_cached ours=") {
		t.Fatalf("result %+v %v", res, lines)
	}
	if cache.Stats().Hits == 0 {
		t.Error("page_cached never hit the cache")
	}
}
