package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHealth_ExitsByTheAnswer: 2xx is healthy; 503 and an unreachable server are errors naming
// the status or the failure.
func TestHealth_ExitsByTheAnswer(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(`{"status":"degraded","degraded":["builds: redis unreachable"]}`))
	}))
	defer srv.Close()
	if _, err := run(t, "health", "--url", srv.URL+"/readyz"); err != nil {
		t.Fatalf("healthy server: %v", err)
	}
	status.Store(http.StatusServiceUnavailable)
	if _, err := run(t, "health", "--url", srv.URL+"/readyz"); err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "redis unreachable") {
		t.Fatalf("degraded server: %v", err)
	}
	srv.Close()
	if _, err := run(t, "health", "--url", srv.URL+"/readyz", "--timeout", "1s"); err == nil || !strings.Contains(err.Error(), "health:") {
		t.Fatalf("unreachable server: %v", err)
	}
}
