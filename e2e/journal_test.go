package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// journalEnv is the environment variable of publish.build-status.resilience.journal.
const journalEnv = "REDSTATE_PUBLISH_BUILD_STATUS_RESILIENCE_JOURNAL"

// TestJournal_FallbackWritesSurviveProcessKill: with the fallback journal, writes accepted while
// Redis is down survive a SIGKILL of the process that accepted them: a new process on the same
// journal writes them back to Redis once it returns.
func TestJournal_FallbackWritesSurviveProcessKill(t *testing.T) {
	redis := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	journal := filepath.Join(t.TempDir(), "state", "fallback.journal")
	t.Setenv(journalEnv, journal) // startServer passes the test's environment to the process

	s1 := startServer(t, "--redis", redis.URL, "--policy", "fallback")
	redis.Kill(t)
	const idB = "6ba7b810-9dad-41d1-80b4-00c04fd430c8"
	builds := map[string]string{
		sampleID: buildWithID(sampleID, "2025-11-09T11:00:00"),
		idB:      buildWithID(idB, "2025-11-09T11:05:00"),
	}
	for id, body := range builds {
		if code, resp, _ := s1.do(t, http.MethodPut, "/v1/builds/"+id, body); code != http.StatusOK {
			t.Fatalf("PUT %s with Redis down: %d %s\n%s", id, code, resp, s1.Logs())
		}
	}
	if fi, err := os.Stat(journal); err != nil || fi.Size() == 0 {
		t.Fatalf("journal after acknowledged fallback writes: %v, %v", fi, err)
	}
	if err := s1.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no final write-back
		t.Fatal(err)
	}
	<-s1.done

	redis.Restart(t)
	client := redis.Client(t)
	ctx := context.Background()
	for id := range builds {
		if n := client.Exists(ctx, "ingenio:publish:build:"+id).Val(); n != 0 {
			t.Fatalf("build %s reached Redis before the new process started", id)
		}
	}
	s2 := startServer(t, "--redis", redis.URL, "--policy", "fallback")
	if !strings.Contains(s2.Logs(), `"recovered":2`) {
		t.Errorf("new process did not log 2 recovered writes:\n%s", s2.Logs())
	}
	eventually(t, 40*time.Second, "the recovered writes to reach Redis", func() bool {
		for id, body := range builds {
			v, err := client.Get(ctx, "ingenio:publish:build:"+id).Result()
			if err != nil || !jsonEqual(t, []byte(v), []byte(body)) {
				return false
			}
		}
		return true
	})
	for id, body := range builds {
		code, got, _ := s2.do(t, http.MethodGet, "/v1/builds/"+id, "")
		if code != http.StatusOK || !jsonEqual(t, got, []byte(body)) {
			t.Fatalf("GET %s after recovery: %d %s", id, code, got)
		}
	}
	eventually(t, 10*time.Second, "the journal to be emptied after write-back", func() bool {
		fi, err := os.Stat(journal)
		return err == nil && fi.Size() == 0
	})
	s2.stop(t)
}
