package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestFeed_RedisKilledMidRun: with Redis (AOF) killed, the feed keeps answering from SQL
// (counts, unread pages) and accepts writes (read, publish); when Redis returns, the missed
// writes are repaired and `redstate feed verify` finds no drift.
func TestFeed_RedisKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	rds := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	s := startServer(t, "--redis", rds.URL)
	mustStatus := func(method, path, body string, want int) []byte {
		t.Helper()
		var headers []string
		if body != "" {
			headers = []string{"Content-Type", "application/json"}
		}
		status, resp, _ := s.do(t, method, path, body, headers...)
		if status != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, status, resp, want)
		}
		return resp
	}
	mustStatus(http.MethodPut, "/v1/feed/users/2001/following/1001", "", http.StatusOK)
	var ids []int64
	publish := func() {
		var p struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(mustStatus(http.MethodPost, "/v1/feed/posts", `{"userId":1001,"title":"t","content":"c"}`, http.StatusCreated), &p)
		ids = append(ids, p.ID)
	}
	publish()
	publish()
	eventually(t, 30*time.Second, "the fan-out", func() bool {
		return strings.Contains(string(mustStatus(http.MethodGet, "/v1/feed/users/2001/unread-counts", "", http.StatusOK)), `"total":2`)
	})

	rds.Kill(t)
	if body := mustStatus(http.MethodGet, "/v1/feed/users/2001/unread-counts", "", http.StatusOK); !strings.Contains(string(body), `"total":2`) {
		t.Fatalf("counts with Redis down: %s", body)
	}
	if body := mustStatus(http.MethodGet, "/v1/feed/users/2001/authors/1001/posts?readStatus=UNREAD&size=10", "", http.StatusOK); strings.Count(string(body), `"title"`) != 2 {
		t.Fatalf("unread page with Redis down: %s", body)
	}
	mustStatus(http.MethodPost, "/v1/feed/users/2001/read/"+itoa64(ids[0]), "", http.StatusNoContent)
	publish()
	if body := mustStatus(http.MethodGet, "/v1/feed/users/2001/unread-counts", "", http.StatusOK); !strings.Contains(string(body), `"total":2`) {
		t.Fatalf("counts with Redis down after a read and a publish: %s", body)
	}

	rds.Restart(t)
	verify := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, binary, "feed", "verify", "--redis", rds.URL, "--data-dir", dataDir(t)).CombinedOutput()
		return string(out), err
	}
	var out string
	eventually(t, time.Minute, "feed verify to find no drift after Redis returned", func() bool {
		var err error
		out, err = verify()
		return err == nil
	})
	t.Logf("verify: %s", strings.TrimSpace(out))
	if body := mustStatus(http.MethodGet, "/v1/feed/users/2001/unread-counts", "", http.StatusOK); !strings.Contains(string(body), `"total":2`) {
		t.Fatalf("counts after Redis returned: %s", body)
	}
}

func itoa64(n int64) string { b, _ := json.Marshal(n); return string(b) }
