package buildstatusbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/redistest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	var progress bytes.Buffer
	cs, err := Run(context.Background(), Options{
		Client: client, Clients: 2, Duration: 200 * time.Millisecond, Batch: 50, Builds: 200, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
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
	if n := client.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys left after cleanup", n)
	}
	if !strings.Contains(progress.String(), "cleanup: unlinked") {
		t.Errorf("progress lacks the cleanup line:\n%s", progress.String())
	}
}
