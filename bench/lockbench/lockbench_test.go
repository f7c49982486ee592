package lockbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	ms := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (Measurements, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond})
	})
	if len(ms) != 2 || ms[0].Name != "lock.cycle" || ms[1].Name != "lock.contended" {
		t.Fatalf("got %+v", ms)
	}
	for _, m := range ms {
		if m.Ours.Ops == 0 || m.Baseline.Ops == 0 || !strings.HasPrefix(m.ResultLine(), "RESULT "+m.Name+" ours=") {
			t.Errorf("%s: ours=%d baseline=%d line %q", m.Name, m.Ours.Ops, m.Baseline.Ops, m.ResultLine())
		}
	}
	if ms[0].OursBusy != 0 || ms[0].BaselineBusy != 0 {
		t.Errorf("uncontended mode saw busy locks: %d %d", ms[0].OursBusy, ms[0].BaselineBusy)
	}
}

// TestRun_DirectLocks: the bench also runs ours with each script alone on the client.
func TestRun_DirectLocks(t *testing.T) {
	ms := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (Measurements, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond, DirectLocks: true})
	})
	if len(ms) != 2 || ms[0].Ours.Ops == 0 || ms[1].Ours.Ops == 0 {
		t.Fatalf("got %+v", ms)
	}
}
