package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestExecutorDegraded_RecoversWhenRedisReturns: a server started while Redis is down (the
// default on-redis-unavailable: memory) refuses executor work with 503 and is not ready; once
// Redis answers it switches the executor to Redis by itself: ready again and serving, without
// ever keeping tenant locks in process memory.
func TestExecutorDegraded_RecoversWhenRedisReturns(t *testing.T) {
	rds := redistest.StartStandalone(t)
	rds.Stop(t) // the port stays reserved for the restart
	s := startServer(t, "--redis", rds.URL)

	if code, body, _ := s.do(t, http.MethodGet, "/readyz", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz while Redis is down: %d %s", code, body)
	}
	code, body, _ := s.do(t, http.MethodGet, "/v1/executor/tasks/task-1", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "degraded") {
		t.Fatalf("executor while degraded: %d %s, want 503", code, body)
	}
	if _, metrics, _ := s.do(t, http.MethodGet, "/metrics", ""); !strings.Contains(string(metrics), "redstate_executor_degraded 1") {
		t.Fatal("redstate_executor_degraded is not 1 while degraded")
	}

	rds.Restart(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _, _ := s.do(t, http.MethodGet, "/readyz", "")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready 60 s after Redis returned:\n%s", s.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body, _ := s.do(t, http.MethodGet, "/v1/executor/tasks/task-1", ""); code != http.StatusNotFound {
		t.Fatalf("executor after Redis returned: %d %s, want 404 from the Redis-backed executor", code, body)
	}
	if _, metrics, _ := s.do(t, http.MethodGet, "/metrics", ""); !strings.Contains(string(metrics), "redstate_executor_degraded 0") {
		t.Fatal("redstate_executor_degraded is not 0 after recovery")
	}
	if !strings.Contains(s.Logs(), "EXECUTOR RECOVERED") {
		t.Fatalf("no recovery log line:\n%s", s.Logs())
	}
}
