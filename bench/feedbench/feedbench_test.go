package feedbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
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
