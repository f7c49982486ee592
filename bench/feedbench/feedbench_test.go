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
	lines := results(res)
	if res.FanOutOurs == 0 || res.FanOutBaseline == 0 || res.FirstOurs == 0 || res.FirstBaseline == 0 || res.Read.Ours.Ops == 0 || res.Page.Ours.Ops == 0 || res.BytesPerEntry <= 0 ||
		len(lines) != 5 || !strings.HasPrefix(lines[0], "RESULT feed.fanout ours=") || !strings.HasPrefix(lines[1], "RESULT feed.fanout_first ours=") {
		t.Fatalf("result %+v %v", res, lines)
	}
	for i, line := range lines[:4] {
		if !strings.Contains(line, " server_us=") || !strings.Contains(line, " client_us=") {
			t.Errorf("line %d lacks the costs: %q", i, line)
		}
	}
	// Each side's cost is its own: ours sends scripts, the baseline plain commands.
	for name, c := range map[string][2]bench.SideCost{"fanout": res.FanOutCost, "fanout_first": res.FirstCost, "read": res.ReadCost} {
		if c[0].CPU <= 0 || c[1].CPU <= 0 || c[0].Commands["evalsha"].Calls == 0 || c[1].Commands["evalsha"].Calls != 0 {
			t.Errorf("%s: costs %+v", name, c)
		}
	}
	if n := res.FirstCost[1].Commands["sadd"].Calls; n != 3000 {
		t.Errorf("the baseline's first fan-out ran %d SADD, want 3000", n)
	}
}

// results returns r's RESULT lines.
func results(r Result) []string {
	var out []string
	for _, l := range r.Lines() {
		if strings.HasPrefix(l, "RESULT ") {
			out = append(out, l)
		}
	}
	return out
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
	lines := results(res)
	if res.PageCached == nil || res.PageCached.Ours.Ops == 0 || len(lines) != 6 || !strings.HasPrefix(lines[4], "RESULT feed.page_cached ours=") {
		t.Fatalf("result %+v %v", res, lines)
	}
	if cache.Stats().Hits == 0 {
		t.Error("page_cached never hit the cache")
	}
}
