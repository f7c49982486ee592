package checkpointbench

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
	client := redistest.StartStandalone(t).Client(t)
	var progress bytes.Buffer
	cs, err := Run(context.Background(), Options{Client: client, Clients: 4, Duration: 200 * time.Millisecond, Tasks: 50, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	for i, want := range []string{"checkpoint.put", "checkpoint.get"} {
		if cs[i].Name != want || cs[i].Ours.Ops == 0 || cs[i].Baseline.Ops == 0 || !strings.HasPrefix(bench.ResultLine(cs[i]), "RESULT "+want+" ours=") {
			t.Errorf("comparison %d: %+v", i, cs[i])
		}
	}
	if n := client.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys left after cleanup", n)
	}
}
