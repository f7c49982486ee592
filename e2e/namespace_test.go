package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
)

// TestNamespace_TwoEnvironmentsShareARedis: two serve processes with every block on
// (build status, the report flow and its queue, the executor's plans, tasks, checkpoints and
// tenant locks, the CDC index with its counters and dead letters, the feed) share one Redis
// and differ only by --namespace. Every key either writes starts with its namespace (the index
// wrote outside it once), neither sees the other's data, and each process talks to Redis
// through one client: CLIENT LIST shows one connection name per process (five pools, one per
// block, before the composition root).
func TestNamespace_TwoEnvironmentsShareARedis(t *testing.T) {
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
	namespaces := []string{"envA-", "envB-"}
	servers := make([]*server, len(namespaces))
	for i, ns := range namespaces {
		// Each environment has its own SQL truth (a data directory of its own).
		servers[i] = startServer(t, "--redis", rds.URL, "--namespace", ns, "--config", cfg, "--data-dir", t.TempDir())
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { exerciseEveryBlock(t, s) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	client := rds.Client(t)
	for _, s := range servers {
		names := connectionNames(t, client, s.cmd.Process.Pid)
		if len(names) != 1 {
			t.Errorf("serve (pid %d) talks to Redis through %d clients %v, want 1", s.cmd.Process.Pid, len(names), names)
		}
	}
	for _, s := range servers {
		// Each saw only its own publish and its own index rows.
		if _, body, _ := s.do(t, http.MethodGet, "/v1/feed/users/2001/unread-counts", ""); !strings.Contains(string(body), `"total":1`) {
			t.Errorf("unread counts = %s, want total 1 (the other environment's post leaked in)", body)
		}
		s.stop(t) // flushes the index counters
	}
	keys, err := client.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "envA-") && !strings.HasPrefix(k, "envB-") {
			t.Errorf("key %q is outside both namespaces", k)
		}
	}
	for _, ns := range namespaces {
		for _, want := range []string{"executor:", "las_im_data_sync:shop:orders:fil-1", "{las_im_data_sync:shop:tagged}:fil-1",
			"las_im_data_sync:counters", "las_im_data_sync:deadletter", "user:unread:", "report:", "ingenio:publish:"} {
			if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, ns+want) }) {
				t.Errorf("no key starting with %s%s among %v", ns, want, keys)
			}
		}
	}
}

// exerciseEveryBlock writes through every block of s: index events (one dead-lettered), a
// follow and a publish with its fan-out, a build, an executor plan run to completion and a
// report submission.
func exerciseEveryBlock(t *testing.T, s *server) {
	json := []string{"Content-Type", "application/json"}
	for _, table := range []string{"orders", "tagged"} {
		events := `{"format":"canal","events":[{"data":[{"id":"1","region":"7"},{"id":"2","region":"x"}],"database":"shop","table":"` + table + `","type":"INSERT","es":1700000000000,"id":1}]}`
		if code, body, _ := s.do(t, http.MethodPost, "/v1/index/events", events, json...); code != http.StatusOK || !strings.Contains(string(body), `"applied":1`) {
			t.Errorf("index events: %d %s", code, body)
			return
		}
	}
	if code, body, _ := s.do(t, http.MethodPut, "/v1/feed/users/2001/following/1001", "", json...); code != http.StatusOK {
		t.Errorf("follow: %d %s", code, body)
		return
	}
	if code, body, _ := s.do(t, http.MethodPost, "/v1/feed/posts", `{"userId":1001,"title":"t","content":"c"}`, json...); code != http.StatusCreated {
		t.Errorf("publish: %d %s", code, body)
		return
	}
	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+sampleID, sampleBuild); code != http.StatusOK {
		t.Errorf("PUT build: %d %s", code, body)
		return
	}
	plan := `{"planId":"plan-ns","maxConcurrency":1,"tasks":[{"taskId":"task-ns","tenantId":"acme","handler":"steps","stages":["s0","s1"]}]}`
	if code, body, _ := s.do(t, http.MethodPost, "/v1/executor/plans", plan); code != http.StatusCreated {
		t.Errorf("create plan: %d %s", code, body)
		return
	}
	if code, body, _ := s.do(t, http.MethodPost, "/api/assessment/submit", `{"recordId": 7, "answers": {"q": 1}}`); code != http.StatusAccepted {
		t.Errorf("submit: %d %s", code, body)
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, fanned, _ := s.do(t, http.MethodGet, "/v1/feed/users/2001/unread-counts", "")
		_, task, _ := s.do(t, http.MethodGet, "/v1/executor/tasks/task-ns", "")
		_, rep, _ := s.do(t, http.MethodGet, "/api/assessment/7/result", "")
		if strings.Contains(string(fanned), `"total":1`) && strings.Contains(string(task), `"COMPLETED"`) && strings.Contains(string(rep), `"status":4`) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("not done within 60 s: counts %s, task %s, report %s", fanned, task, rep)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connectionNames returns the distinct CLIENT SETNAME names of the Redis connections the
// process pid holds ("redstate-<pid>-<n>", one n per client it made).
func connectionNames(t *testing.T, client *redis.Client, pid int) []string {
	t.Helper()
	list, err := client.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("redstate-%d-", pid)
	var names []string
	for _, line := range strings.Split(list, "\n") {
		for _, field := range strings.Fields(line) {
			if name, ok := strings.CutPrefix(field, "name="); ok && strings.HasPrefix(name, prefix) && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no connection named %s* in CLIENT LIST:\n%s", prefix, list)
	}
	return names
}
