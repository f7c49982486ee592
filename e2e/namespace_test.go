package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestNamespace_ReachesEveryBlocksKeys: with --namespace, the keys of every block, the
// executor's plans, tasks, checkpoints and tenant locks included, start with the namespace, so
// two environments sharing a Redis share nothing.
func TestNamespace_ReachesEveryBlocksKeys(t *testing.T) {
	rds := redistest.StartStandalone(t)
	stages := newStageServer(t, "none")
	t.Setenv("REDSTATE_EXECUTOR_HANDLERS", fmt.Sprintf("[{name: steps, url: %q, timeout: 30s}]", stages.url))
	s := startServer(t, "--redis", rds.URL, "--namespace", "envA-")

	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+sampleID, sampleBuild); code != http.StatusOK {
		t.Fatalf("PUT build: %d %s", code, body)
	}
	plan := `{"planId":"plan-ns","maxConcurrency":1,"tasks":[{"taskId":"task-ns","tenantId":"acme","handler":"steps","stages":["s0","s1"]}]}`
	if code, body, _ := s.do(t, http.MethodPost, "/v1/executor/plans", plan); code != http.StatusCreated {
		t.Fatalf("create plan: %d %s", code, body)
	}
	if code, body, _ := s.do(t, http.MethodPost, "/api/assessment/submit", `{"recordId": 7, "answers": {"q": 1}}`); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	client := rds.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info struct{ Status string }
		getJSON(t, s, "/v1/executor/tasks/task-ns", &info)
		if info.Status == "COMPLETED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task not completed: %+v", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	keys, err := client.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var sawExecutor bool
	for _, k := range keys {
		if !strings.HasPrefix(k, "envA-") {
			t.Errorf("key %q is outside the namespace envA-", k)
		}
		sawExecutor = sawExecutor || strings.HasPrefix(k, "envA-executor:")
	}
	if !sawExecutor {
		t.Fatalf("no executor key under envA-executor: among %v", keys)
	}
}
