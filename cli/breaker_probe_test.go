package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redstate/redstate/redistest"
)

// blockDetails returns each block's overview status and detail.
func blockDetails(t *testing.T, base string) map[string]string {
	t.Helper()
	status, body := request(t, http.MethodGet, base+"/v1/overview", "")
	if status != http.StatusOK {
		t.Fatalf("overview = %d %s", status, body)
	}
	var o struct {
		Blocks []struct{ Name, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, b := range o.Blocks {
		out[b.Name] = b.Status + ": " + b.Detail
	}
	return out
}

// awaitBlocks polls the overview until cond holds for it, failing after 30 s.
func awaitBlocks(t *testing.T, base, what string, cond func(map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := blockDetails(t, base)
		if cond(got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: overview blocks %v after 30s", what, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServe_EveryBreakerFollowsRedisBack: serve gives every circuit breaker (build status and
// feed) the probe. With both breakers' open wait set to an hour, Redis killed opens both, and
// once it is restarted both close again and a build is saved, as only their probes can do
// within the test's bound.
func TestServe_EveryBreakerFollowsRedisBack(t *testing.T) {
	t.Setenv("REDSTATE_PUBLISH_BUILD_STATUS_RESILIENCE_WAIT_DURATION_IN_OPEN_STATE", "1h")
	t.Setenv("REDSTATE_FEED_BREAKER_WAIT_DURATION_IN_OPEN_STATE", "1h")
	srv := redistest.StartStandalone(t)
	base, logs, _, _ := startServe(t, "--redis", srv.URL)
	put := func() (int, string) {
		id := uuid.NewString()
		return request(t, http.MethodPut, base+"/v1/builds/"+id, `{"buildId":"`+id+`","projectId":"p","platforms":["android"],"status":"IN_PROGRESS"}`)
	}
	if status, body := put(); status != http.StatusOK {
		t.Fatalf("PUT with Redis up = %d %s", status, body)
	}

	srv.Kill(t)
	awaitBlocks(t, base, "Redis killed; saves and feed reads should open both breakers", func(b map[string]string) bool {
		_, _ = put()
		_, _ = request(t, http.MethodGet, base+"/v1/feed/users/2001/unread-counts", "")
		return strings.Contains(b["builds"], "breaker open") && strings.Contains(b["feed"], "breaker open")
	})
	srv.Restart(t)
	awaitBlocks(t, base, "Redis restarted; the probes should close both breakers", func(b map[string]string) bool {
		return strings.Contains(b["builds"], "breaker closed") && b["feed"] == "ok: breaker closed"
	})
	if status, body := put(); status != http.StatusOK {
		t.Fatalf("PUT after the breakers closed = %d %s", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, block := range []string{"buildstatus", "feed"} {
		for !strings.Contains(logs.String(), `"msg":"redis circuit breaker closed: Redis answers again","block":"`+block+`"`) {
			if time.Now().After(deadline) {
				t.Fatalf("no closing line of the %s breaker in the logs:\n%s", block, logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
