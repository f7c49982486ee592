// Package e2e runs the real redstate binary against real redis-server processes.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

const sampleBuild = `{"buildId":"550e8400-e29b-41d4-a716-446655440000","projectId":"test-project-001","platforms":["android","ios"],"status":"IN_PROGRESS","platformResults":{"android":{"platform":"android","status":"SUCCESS","progress":100,"logUrl":null,"downloadUrl":"550e8400.../android/app.apk","errorMessage":null,"startedAt":"2025-11-09T10:30:00","completedAt":"2025-11-09T10:35:00"},"ios":{"platform":"ios","status":"IN_PROGRESS","progress":50,"logUrl":null,"downloadUrl":null,"errorMessage":null,"startedAt":"2025-11-09T10:30:00","completedAt":null}},"estimatedTime":15,"createdAt":"2025-11-09T10:30:00","updatedAt":"2025-11-09T10:33:00"}`

const sampleID = "550e8400-e29b-41d4-a716-446655440000"

func buildWithID(id, updatedAt string) string {
	s := strings.ReplaceAll(sampleBuild, sampleID, id)
	return strings.Replace(s, `"updatedAt":"2025-11-09T10:33:00"`, `"updatedAt":"`+updatedAt+`"`, 1)
}

// TestBuildSurvivesServerRestart saves a build over HTTP, restarts the redstate process and
// reads the build back byte for byte.
func TestBuildSurvivesServerRestart(t *testing.T) {
	redis := redistest.StartStandalone(t)
	s := startServer(t, "--redis", redis.URL)
	code, saved, hdr := s.do(t, http.MethodPut, "/v1/builds/"+sampleID, sampleBuild)
	if code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, saved)
	}
	etag := hdr.Get("ETag")
	s.stop(t)

	s2 := startServer(t, "--redis", redis.URL)
	code, got, hdr2 := s2.do(t, http.MethodGet, "/v1/builds/"+sampleID, "")
	if code != http.StatusOK {
		t.Fatalf("GET after restart: %d %s", code, got)
	}
	if !bytes.Equal(got, saved) {
		t.Fatalf("build changed across restart:\nsaved %s\ngot   %s", saved, got)
	}
	if !jsonEqual(t, got, []byte(sampleBuild)) {
		t.Fatalf("stored document differs from the one sent:\nsent %s\ngot  %s", sampleBuild, got)
	}
	if hdr2.Get("ETag") != etag {
		t.Fatalf("ETag changed across restart: %q then %q", etag, hdr2.Get("ETag"))
	}
	raw := redis.Client(t).Get(context.Background(), "ingenio:publish:build:"+sampleID).Val()
	if raw != string(got) {
		t.Fatalf("value at the seed's key is not the served document:\nredis %s\nhttp  %s", raw, got)
	}
	s2.stop(t)
}

// TestRedisDown_FailFastAnswers503 kills Redis under a fail-fast server: requests get a JSON 503
// and service resumes when Redis is back.
func TestRedisDown_FailFastAnswers503(t *testing.T) {
	redis := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	s := startServer(t, "--redis", redis.URL, "--policy", "fail-fast")
	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+sampleID, sampleBuild); code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, body)
	}
	redis.Kill(t)

	for i := 0; i < 20; i++ { // before and after the breaker opens
		code, body, _ := s.do(t, http.MethodGet, "/v1/builds/"+sampleID, "")
		if code != http.StatusServiceUnavailable {
			t.Fatalf("GET with Redis down: %d %s, want 503", code, body)
		}
		var e struct{ Code, Message string }
		if err := json.Unmarshal(body, &e); err != nil || e.Code != "unavailable" || e.Message == "" {
			t.Fatalf("503 body is not a JSON error with code unavailable: %s", body)
		}
	}
	if code, _, _ := s.do(t, http.MethodGet, "/readyz", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with Redis down: %d, want 503", code)
	}

	redis.Restart(t)
	eventually(t, 30*time.Second, "GET to succeed after Redis restarts", func() bool {
		code, _, _ := s.do(t, http.MethodGet, "/v1/builds/"+sampleID, "")
		return code == http.StatusOK
	})
}

// TestRedisDown_FallbackKeepsServingAndWritesBack kills Redis under a fallback server: writes
// are accepted and readable meanwhile, and land in Redis once it is back (newer wins).
func TestRedisDown_FallbackKeepsServingAndWritesBack(t *testing.T) {
	redis := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	s := startServer(t, "--redis", redis.URL, "--policy", "fallback")
	const idB = "6ba7b810-9dad-41d1-80b4-00c04fd430c8"
	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+sampleID, sampleBuild); code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, body)
	}
	redis.Kill(t)

	// A newer version of an existing build and a new build, both written while Redis is down.
	newer := buildWithID(sampleID, "2025-11-09T11:00:00")
	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+sampleID, newer); code != http.StatusOK {
		t.Fatalf("PUT in fallback: %d %s", code, body)
	}
	fresh := buildWithID(idB, "2025-11-09T11:00:00")
	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+idB, fresh); code != http.StatusOK {
		t.Fatalf("PUT of a new build in fallback: %d %s", code, body)
	}
	code, got, _ := s.do(t, http.MethodGet, "/v1/builds/"+idB, "")
	if code != http.StatusOK || !jsonEqual(t, got, []byte(fresh)) {
		t.Fatalf("GET in fallback: %d %s", code, got)
	}

	redis.Restart(t)
	client := redis.Client(t)
	eventually(t, 40*time.Second, "fallback writes to reach Redis", func() bool {
		a, errA := client.Get(context.Background(), "ingenio:publish:build:"+sampleID).Result()
		b, errB := client.Get(context.Background(), "ingenio:publish:build:"+idB).Result()
		return errA == nil && errB == nil && jsonEqual(t, []byte(a), []byte(newer)) && jsonEqual(t, []byte(b), []byte(fresh))
	})
	eventually(t, 10*time.Second, "the pending gauge to drop to 0", func() bool {
		_, metrics, _ := s.do(t, http.MethodGet, "/metrics", "")
		return bytes.Contains(metrics, []byte(`redstate_fallback_writes_pending{block="buildstatus"} 0`))
	})
	if !strings.Contains(s.Logs(), "write-back") {
		t.Fatalf("no write-back log line:\n%s", s.Logs())
	}
	s.stop(t)
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
