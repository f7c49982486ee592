package checkpointbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	cs := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (bench.Comparisons, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond, Tasks: 50})
	})
	for i, want := range []string{"checkpoint.put", "checkpoint.get"} {
		if cs[i].Name != want || cs[i].Ours.Ops == 0 || cs[i].Baseline.Ops == 0 || !strings.HasPrefix(bench.ResultLine(cs[i]), "RESULT "+want+" ours=") {
			t.Errorf("comparison %d: %+v", i, cs[i])
		}
	}
}
