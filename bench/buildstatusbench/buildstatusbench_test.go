package buildstatusbench

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	r := benchtest.Smoke(t, 2, func(ctx context.Context, target bench.Target) (*Report, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond, Batch: 50, Builds: 200, Ops: []string{"get", "save", "batch_get"}})
	})
	checkComparisons(t, r.Comparisons, "buildstatus.get", "buildstatus.save", "buildstatus.batch_get")
	if r.Staleness != nil || r.Memory != nil {
		t.Error("cache measurements without a cache")
	}
}

// TestRun_SmokeWithClientCache: the cached reads, the staleness seen by a second instance and
// the memory per entry are measured and printed.
func TestRun_SmokeWithClientCache(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	srv := redistest.StartStandalone(t)
	o := redisconn.Options{URL: srv.URL}
	cache := redistest.NewCache(t, o)
	r := benchtest.Check(t, srv.Client(t), 2, func(ctx context.Context, target bench.Target) (*Report, error) {
		target.Cache, target.Redis = cache, o
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond, Batch: 50, Builds: 200,
			Ops: []string{"get", "save", "batch_get", "get_cached", "batch_get_cached", "staleness", "memory"}})
	})
	checkComparisons(t, r.Comparisons, "buildstatus.get", "buildstatus.save", "buildstatus.batch_get",
		"buildstatus.get_cached", "buildstatus.batch_get_cached")
	if r.Staleness == nil || len(r.Staleness.Samples) == 0 {
		t.Fatal("no staleness samples")
	}
	if r.Memory == nil || r.Memory.Entries != 200 || r.Memory.ValueBytes == 0 {
		t.Fatalf("memory = %+v", r.Memory)
	}
	if cache.Stats().Hits == 0 {
		t.Error("get_cached never hit the cache")
	}
	var out bytes.Buffer
	if err := r.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RESULT buildstatus.get_cached ", "RESULT buildstatus.cache_staleness samples=", "RESULT buildstatus.cache_memory entries=200 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRun_SaveVsDapr builds the Dapr peer (bench/peers/daprstate), runs it beside our
// compare-and-set save on one redis-server and checks both sides saved, without errors, with
// the server's CPU and commands measured for each, and that the RESULT line is printed.
func TestRun_SaveVsDapr(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server and builds the Dapr peer")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the Dapr peer is built with the go command, not found")
	}
	r := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (*Report, error) {
		return Run(ctx, Options{Target: target, Duration: 400 * time.Millisecond, Builds: 40, Batch: 10, Ops: []string{"save_vs_dapr"}})
	})
	d := r.Dapr
	if d == nil || len(r.Comparisons) != 0 {
		t.Fatalf("report = %+v, want only save_vs_dapr", r)
	}
	if d.Ours.Ops == 0 || d.Baseline.Ops == 0 || d.Ours.Errors != 0 || d.Baseline.Errors != 0 {
		t.Fatalf("ours %d saves (%d errors), Dapr %d sets (%d errors)", d.Ours.Ops, d.Ours.Errors, d.Baseline.Ops, d.Baseline.Errors)
	}
	// 40 builds over 4 writers: every side wrote each build once and then updated it.
	if d.Ours.Ops <= 40 || d.Baseline.Ops <= 40 {
		t.Errorf("ours %d saves, Dapr %d sets: want updates after the first writes", d.Ours.Ops, d.Baseline.Ops)
	}
	if d.OursCPU <= 0 || d.BaselineCPU <= 0 || d.OursClientCPU <= 0 || d.BaselineClientCPU <= 0 {
		t.Errorf("server CPU ours %s, Dapr %s; client CPU ours %s, Dapr %s", d.OursCPU, d.BaselineCPU, d.OursClientCPU, d.BaselineClientCPU)
	}
	if d.OursRedis["evalsha"].Calls == 0 || d.BaselineRedis["eval"].Calls < d.Baseline.Ops || d.BaselineRedis["expire"].Calls < d.Baseline.Ops {
		t.Errorf("commands: ours %s; Dapr %s", d.OursRedis, d.BaselineRedis)
	}
	var out bytes.Buffer
	if err := r.Print(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "RESULT buildstatus.save_vs_dapr ours=") || !strings.Contains(out.String(), " baseline_client_cpu_us=") {
		t.Errorf("output:\n%s", out.String())
	}
}

func checkComparisons(t *testing.T, cs bench.Comparisons, names ...string) {
	t.Helper()
	if len(cs) != len(names) {
		t.Fatalf("got %d comparisons, want %v", len(cs), names)
	}
	for i, want := range names {
		c := cs[i]
		if c.Name != want || c.Ours.Ops == 0 || c.Baseline.Ops == 0 {
			t.Errorf("comparison %d = %s ours=%d raw=%d, want %s with operations", i, c.Name, c.Ours.Ops, c.Baseline.Ops, want)
		}
		if line := bench.ResultLine(c); !strings.HasPrefix(line, "RESULT "+want+" ours=") {
			t.Errorf("RESULT line %q", line)
		}
	}
}
