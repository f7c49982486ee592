package feedbench

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
	res, err := Run(context.Background(), Options{Client: client, Followers: 3000, Batch: 500, Clients: 4, Duration: 200 * time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	lines := res.Lines()
	if res.FanOutOurs == 0 || res.FanOutBaseline == 0 || res.FirstOurs == 0 || res.FirstBaseline == 0 || res.Read.Ours.Ops == 0 || res.Page.Ours.Ops == 0 || res.BytesPerEntry <= 0 ||
		len(lines) != 5 || !strings.HasPrefix(lines[0], "RESULT feed.fanout ours=") || !strings.HasPrefix(lines[1], "RESULT feed.fanout_first ours=") {
		t.Fatalf("result %+v %v", res, lines)
	}
	if n := client.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys left after cleanup", n)
	}
}
