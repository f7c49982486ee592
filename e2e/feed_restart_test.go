package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestFeed_RestartBetweenPublishAndFanOut: the serving process is SIGKILLed right after
// publishes were acknowledged and before their fan-out finished (checked in Redis: some
// follower lacks an entry); a new process finds every follower's unread entry without any
// command. A fan-out's retry state lives only in the durable queue (and the SQL repair marks),
// never in a process's memory.
func TestFeed_RestartBetweenPublishAndFanOut(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	const (
		author    = 901
		followers = 40
		burst     = 10
	)
	rds := redistest.StartStandalone(t)
	client := rds.Client(t)
	published := 0
	// missing counts the unread entries the followers lack, read from Redis directly.
	missing := func() int {
		have := 0
		for u := 1; u <= followers; u++ {
			n, err := client.ZCount(t.Context(), fmt.Sprintf("user:unread:v2:%d:%d", 5000+u, author), "(-inf", "+inf").Result()
			if err != nil {
				t.Fatal(err)
			}
			have += int(n)
		}
		return followers*published - have
	}
	caught := false
	for round := 0; round < 5 && !caught; round++ {
		s := startServer(t, "--redis", rds.URL)
		if round == 0 {
			for u := 1; u <= followers; u++ {
				if code, body, _ := s.do(t, http.MethodPut, fmt.Sprintf("/v1/feed/users/%d/following/%d", 5000+u, author), ""); code != http.StatusOK {
					t.Fatalf("follow: %d %s", code, body)
				}
				// Reading the counts builds the follower's state in Redis, so fan-outs write
				// to it (a follower without state is built from SQL on first read instead).
				if code, body, _ := s.do(t, http.MethodGet, fmt.Sprintf("/v1/feed/users/%d/unread-counts", 5000+u), ""); code != http.StatusOK {
					t.Fatalf("counts: %d %s", code, body)
				}
			}
		}
		for range burst {
			if code, body, _ := s.do(t, http.MethodPost, "/v1/feed/posts", fmt.Sprintf(`{"userId":%d,"title":"t","content":"c"}`, author),
				"Content-Type", "application/json"); code != http.StatusCreated {
				t.Fatalf("publish: %d %s", code, body)
			}
			published++
		}
		s.kill()
		if m := missing(); m > 0 {
			t.Logf("round %d: killed with %d of %d unread entries not yet fanned out", round, m, followers*published)
			caught = true
		}
	}
	if !caught {
		t.Fatal("every fan-out finished before the kill in 5 rounds; the test did not exercise a restart between publish and fan-out")
	}

	s := startServer(t, "--redis", rds.URL)
	want := fmt.Sprintf(`"total":%d`, published)
	// The interrupted fan-out job is redelivered when its lease (30 s) ends.
	eventually(t, 2*time.Minute, "every follower's unread entries after the restart", func() bool {
		return missing() == 0
	})
	for u := 1; u <= followers; u++ {
		if _, body, _ := s.do(t, http.MethodGet, fmt.Sprintf("/v1/feed/users/%d/unread-counts", 5000+u), ""); !strings.Contains(string(body), want) {
			t.Errorf("user %d counts = %s, want %s", 5000+u, body, want)
		}
	}
}
