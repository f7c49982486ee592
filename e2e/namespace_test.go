package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestNamespace_ReachesEveryBlocksKeys: with --namespace, the keys of every block (build
// status, the report flow and its queue, the executor's plans, tasks, checkpoints and tenant
// locks, the CDC index with its counters and dead letters, the feed) start with the namespace,
// so two environments sharing a Redis share nothing. The index wrote outside it before.
func TestNamespace_ReachesEveryBlocksKeys(t *testing.T) {
	rds := redistest.StartStandalone(t)
	stages := newStageServer(t, "none")
	t.Setenv("REDSTATE_EXECUTOR_HANDLERS", fmt.Sprintf("[{name: steps, url: %q, timeout: 30s}]", stages.url))
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, []byte(`index:
  tables:
    - {db: shop, table: orders, key: id, columns: [{name: id, type: long}, {name: region, type: int}], dimensions: [[{code: reg, column: region}]]}
    - {db: shop, table: tagged, key: id, hash-tag: true, columns: [{name: id, type: long}, {name: region, type: int}], dimensions: [[{code: reg, column: region}]]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--redis", rds.URL, "--namespace", "envA-", "--config", cfg)
	json := []string{"Content-Type", "application/json"}
	for _, table := range []string{"orders", "tagged"} {
		events := `{"format":"canal","events":[{"data":[{"id":"1","region":"7"},{"id":"2","region":"x"}],"database":"shop","table":"` + table + `","type":"INSERT","es":1700000000000,"id":1}]}`
		if code, body, _ := s.do(t, http.MethodPost, "/v1/index/events", events, json...); code != http.StatusOK || !strings.Contains(string(body), `"applied":1`) {
			t.Fatalf("index events: %d %s", code, body)
		}
	}
	if code, body, _ := s.do(t, http.MethodPut, "/v1/feed/users/2001/following/1001", "", json...); code != http.StatusOK {
		t.Fatalf("follow: %d %s", code, body)
	}
	if code, body, _ := s.do(t, http.MethodPost, "/v1/feed/posts", `{"userId":1001,"title":"t","content":"c"}`, json...); code != http.StatusCreated {
		t.Fatalf("publish: %d %s", code, body)
	}
	eventually(t, 30*time.Second, "the fan-out", func() bool {
		_, body, _ := s.do(t, http.MethodGet, "/v1/feed/users/2001/unread-counts", "")
		return strings.Contains(string(body), `"total":1`)
	})

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
	s.stop(t) // flushes the index counters
	keys, err := client.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "envA-") {
			t.Errorf("key %q is outside the namespace envA-", k)
		}
	}
	for _, want := range []string{"envA-executor:", "envA-las_im_data_sync:shop:orders:fil-1", "envA-{las_im_data_sync:shop:tagged}:kid-1",
		"envA-las_im_data_sync:counters", "envA-las_im_data_sync:deadletter", "envA-user:unread:", "envA-report:"} {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, want) }) {
			t.Errorf("no key starting with %s among %v", want, keys)
		}
	}
}
