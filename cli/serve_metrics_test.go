package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestServe_MetricsRedisUpAndFanOutDepth: /metrics says whether Redis answers
// (redstate_redis_up, 1 then 0 once Redis is killed) and reports the depth of the feed's
// fan-out queue beside the configured queues, so that alerts can watch both.
func TestServe_MetricsRedisUpAndFanOutDepth(t *testing.T) {
	srv := redistest.StartStandalone(t)
	base, logs, _, _ := startServe(t, "--redis", srv.URL)
	_, metrics := request(t, http.MethodGet, base+"/metrics", "")
	for _, want := range []string{
		"\nredstate_redis_up 1\n",
		"\nredstate_redis_ping_seconds ",
		`redstate_queue_depth{place="pending",queue="feed:fanout"} 0`,
		`redstate_queue_depth{place="pending",queue="report:queue"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s\nlogs:\n%s", want, metrics, logs)
		}
	}
	srv.Kill(t)
	// The root's ping is reused for up to half a second: scrape until it is taken again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, metrics = request(t, http.MethodGet, base+"/metrics", "")
		if strings.Contains(metrics, "\nredstate_redis_up 0\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after Redis was killed /metrics lacks redstate_redis_up 0:\n%s", metrics)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
