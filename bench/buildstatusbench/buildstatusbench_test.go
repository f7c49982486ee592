package buildstatusbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	cs := benchtest.Smoke(t, 2, func(ctx context.Context, target bench.Target) (bench.Comparisons, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond, Batch: 50, Builds: 200})
	})
	if len(cs) != 3 {
		t.Fatalf("got %d comparisons, want get, save, batch_get", len(cs))
	}
	for i, want := range []string{"buildstatus.get", "buildstatus.save", "buildstatus.batch_get"} {
		c := cs[i]
		if c.Name != want || c.Ours.Ops == 0 || c.Baseline.Ops == 0 {
			t.Errorf("comparison %d = %s ours=%d raw=%d, want %s with operations", i, c.Name, c.Ours.Ops, c.Baseline.Ops, want)
		}
		if line := bench.ResultLine(c); !strings.HasPrefix(line, "RESULT "+want+" ours=") {
			t.Errorf("RESULT line %q", line)
		}
	}
}
