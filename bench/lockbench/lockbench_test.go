package lockbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	client := redistest.StartStandalone(t).Client(t)
	var progress bytes.Buffer
	ms, err := Run(context.Background(), Options{Client: client, Clients: 4, Duration: 200 * time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
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
	if n := client.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys left after cleanup", n)
	}
}
