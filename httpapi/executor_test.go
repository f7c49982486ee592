package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/memstate"
)

func newExecutorAPI(t *testing.T) (*testAPI, *executor.Runner, *sync.Map) {
	t.Helper()
	st := executor.Stores{
		Checkpoints: memstate.NewCheckpoints(memstate.Options{}), Projections: memstate.NewProjections(memstate.Options{}),
		Index: memstate.NewTenantIndex(memstate.Options{}), Locks: memstate.NewLocks(memstate.Options{}),
		Registry: memstate.NewRegistry(memstate.Options{}),
	}
	r, err := executor.New(executor.Options{Stores: st, LockTTL: 5 * time.Second, LockRetryInterval: 5 * time.Millisecond,
		DefaultRetry: executor.RetryPolicy{MaxAttempts: 1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var failOnce sync.Map // stage name → true: fail the next execution
	r.Handle("h", func(ctx context.Context, req executor.StageRequest) (map[string]string, error) {
		if _, ok := failOnce.LoadAndDelete(req.Stage); ok {
			return nil, errors.New("boom")
		}
		return nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	api := newTestAPI(t, func(c *Config, d *Deps) {
		d.Executor = r
		c.Tokens = []config.Token{
			{Name: "reader", Token: "r-secret", Roles: []string{"read"}},
			{Name: "writer", Token: "w-secret", Roles: []string{"write"}},
			{Name: "boss", Token: "a-secret", Roles: []string{"admin"}},
		}
	})
	return api, r, &failOnce
}

func TestExecutorAPI_PlanQueryAndRetry(t *testing.T) {
	api, _, failOnce := newExecutorAPI(t)
	failOnce.Store("s1", true)
	w, a, rd := []string{"Authorization: Bearer w-secret"}, []string{"Authorization: Bearer a-secret"}, []string{"Authorization: Bearer r-secret"}

	body := `{"planId":"p1","maxConcurrency":2,"tasks":[{"taskId":"t1","tenantId":"acme","stages":["s0","s1","s2"],"handler":"h"}]}`
	if res := api.do("POST", "/v1/executor/plans", body, rd...); res.status != http.StatusForbidden {
		t.Fatalf("read role creates a plan: %d", res.status)
	}
	if res := api.do("POST", "/v1/executor/plans", `{"maxConcurrency":1,"tasks":[{"tenantId":"a","stages":["x"],"handler":"nope"}]}`, w...); res.status != http.StatusBadRequest {
		t.Fatalf("unknown handler: %d %s", res.status, res.body)
	}
	if res := api.do("POST", "/v1/executor/plans", body, w...); res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	var task executor.TaskStatusInfo
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := api.do("GET", "/v1/executor/tenants/acme/task", "", rd...)
		if res.status != http.StatusOK {
			t.Fatalf("task: %d %s", res.status, res.body)
		}
		_ = json.Unmarshal(res.body, &task)
		if task.Status == executor.TaskFailed && !task.LockHeld {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task never failed: %s", res.body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if task.TaskID != "t1" || task.LastCompletedStageIndex != 0 || task.CurrentStage != "s1" || task.Reason == "" || !task.HasCheckpoint {
		t.Fatalf("failed task: %+v", task)
	}
	res := api.do("GET", "/v1/executor/tenants/acme/checkpoint", "", rd...)
	if res.status != http.StatusOK || string(res.body) != `{"checkpoint":"present","hasCheckpoint":true,"taskId":"t1","tenantId":"acme"}` {
		t.Fatalf("checkpoint: %d %s", res.status, res.body)
	}
	if res := api.do("POST", "/v1/executor/tenants/acme/retry", `{"fromCheckpoint":true}`, w...); res.status != http.StatusForbidden {
		t.Fatalf("retry needs admin: %d", res.status)
	}
	if res := api.do("POST", "/v1/executor/tenants/acme/retry", `{"fromCheckpoint":true}`, a...); res.status != http.StatusAccepted {
		t.Fatalf("retry: %d %s", res.status, res.body)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		res := api.do("GET", "/v1/executor/plans/p1", "", rd...)
		var p executor.PlanStatusInfo
		_ = json.Unmarshal(res.body, &p)
		if p.Status == executor.PlanCompleted && p.Progress == 1 && len(p.Tasks) == 1 && p.MaxConcurrency == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan: %s", res.body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Completed: the tenant index entry is gone.
	if res := api.do("GET", "/v1/executor/tenants/acme/task", "", rd...); res.status != http.StatusNotFound {
		t.Fatalf("after completion: %d %s", res.status, res.body)
	}
	if res := api.do("GET", "/v1/executor/tenants/bad%20id/task", "", rd...); res.status != http.StatusBadRequest {
		t.Fatalf("bad tenant id: %d", res.status)
	}
	if res := api.do("POST", "/v1/executor/plans/p1/explode", "", w...); res.status != http.StatusNotFound {
		t.Fatalf("unknown action: %d", res.status)
	}
}

func TestExecutorAPI_PauseResumeCancel(t *testing.T) {
	api, r, _ := newExecutorAPI(t)
	gate := make(chan struct{})
	r.Handle("slow", func(ctx context.Context, req executor.StageRequest) (map[string]string, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	})
	w := []string{"Authorization: Bearer w-secret"}
	body := `{"planId":"p2","maxConcurrency":1,"tasks":[{"taskId":"t2","tenantId":"beta","stages":["a","b"],"handler":"slow"}]}`
	if res := api.do("POST", "/v1/executor/plans", body, w...); res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	if res := api.do("POST", "/v1/executor/tenants/beta/pause", "", w...); res.status != http.StatusAccepted {
		t.Fatalf("pause: %d %s", res.status, res.body)
	}
	close(gate)
	waitAPIStatus(t, api, "beta", executor.TaskPaused)
	if res := api.do("POST", "/v1/executor/tenants/beta/resume", "", w...); res.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", res.status, res.body)
	}
	waitAPIStatus(t, api, "", executor.TaskCompleted)
	if res := api.do("POST", "/v1/executor/plans/p2/cancel", "", w...); res.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", res.status, res.body)
	}
}

func waitAPIStatus(t *testing.T, api *testAPI, tenant string, want executor.TaskStatus) {
	t.Helper()
	path := "/v1/executor/tasks/t2"
	if tenant != "" {
		path = "/v1/executor/tenants/" + tenant + "/task"
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := api.do("GET", path, "", "Authorization: Bearer r-secret")
		var info executor.TaskStatusInfo
		_ = json.Unmarshal(res.body, &info)
		if info.Status == want && !info.LockHeld {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %s: %d %s", want, res.status, res.body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExecutorAPI_RetryBackoffAsDurationString(t *testing.T) {
	api, _, _ := newExecutorAPI(t)
	w := "Authorization: Bearer w-secret"
	body := `{"planId":"p-dur","maxConcurrency":1,"tasks":[{"taskId":"t-dur","tenantId":"acme","stages":["s0"],"handler":"h","retry":{"maxAttempts":2,"backoff":"1s","maxBackoff":"1m"}}]}`
	if res := api.do("POST", "/v1/executor/plans", body, w); res.status != http.StatusCreated {
		t.Fatalf("backoff \"1s\": %d %s", res.status, res.body)
	}
	bad := `{"planId":"p-bad","maxConcurrency":1,"tasks":[{"taskId":"t-bad","tenantId":"acme","stages":["s0"],"handler":"h","retry":{"backoff":"soon"}}]}`
	if res := api.do("POST", "/v1/executor/plans", bad, w); res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "retry.backoff") {
		t.Fatalf("backoff \"soon\": %d %s", res.status, res.body)
	}
}

// TestExecutorAPI_ContextValueNotAStringNamesTheKey: a plan whose task contextData holds a number
// is 400 naming the task and the key, not only "tasks.contextData", so the caller can tell
// which value to fix.
func TestExecutorAPI_ContextValueNotAStringNamesTheKey(t *testing.T) {
	api, _, _ := newExecutorAPI(t)
	body := `{"maxConcurrency":1,"tasks":[{"tenantId":"a","stages":["s0"],"handler":"h","contextData":{"region":"eu"}},` +
		`{"tenantId":"b","stages":["s0"],"handler":"h","contextData":{"region":"eu","retries":5}}]}`
	e := wantError(t, api.do("POST", "/v1/executor/plans", body, "Authorization: Bearer w-secret"), http.StatusBadRequest, "invalid")
	if !strings.Contains(e.Message, "$.tasks[1].contextData.retries must be a string, got number") {
		t.Fatalf("message %q does not name the value", e.Message)
	}
}
