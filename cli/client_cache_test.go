package cli

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestServe_ClientCacheServesBuildReads: with redis.client-cache.enabled, serve reads a build
// through the cache (hits in /metrics after repeated GETs), and a PUT is read back at once.
func TestServe_ClientCacheServesBuildReads(t *testing.T) {
	srv := redistest.StartStandalone(t)
	t.Setenv("REDSTATE_REDIS_CLIENT_CACHE_ENABLED", "true")
	t.Setenv("REDSTATE_REDIS_CLIENT_CACHE_OWN_WRITE_WINDOW", "1ms")
	base, _, _, _ := startServe(t, "--redis", srv.URL)
	if status, body := request(t, http.MethodPut, base+"/v1/builds/"+testBuildID, testDoc); status >= 300 {
		t.Fatalf("PUT = %d %s", status, body)
	}
	time.Sleep(2 * time.Millisecond) // past the own-write window: the reads may come from the cache
	for range 3 {
		if status, body := request(t, http.MethodGet, base+"/v1/builds/"+testBuildID, ""); status != http.StatusOK {
			t.Fatalf("GET = %d %s", status, body)
		}
	}
	_, metrics := request(t, http.MethodGet, base+"/metrics", "")
	m := regexp.MustCompile(`redstate_client_cache_reads_total\{result="hit"\} (\d+)`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no cache hit counter in /metrics:\n%s", metrics)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Fatalf("3 GETs of one build and no cache hit:\n%s", metrics)
	}
}
