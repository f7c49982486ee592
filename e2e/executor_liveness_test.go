package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/redistest"
)

// TestExecutorLiveness_KilledInstanceOrphanedInSeconds: two instances share Redis with the
// default 9000 s tenant lock TTL. Instance 1 runs a stage that outlives many liveness periods;
// instance 2 never marks it while instance 1 lives. Instance 1 is SIGKILLed: instance 2 marks
// the task interrupted within seconds (liveness TTL + scan interval), not 2.5 hours, takes the
// lock over, and a retry from the checkpoint completes.
func TestExecutorLiveness_KilledInstanceOrphanedInSeconds(t *testing.T) {
	rds := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	stages := newStageServer(t, "s1")
	t.Setenv("REDSTATE_EXECUTOR_HANDLERS", fmt.Sprintf("[{name: steps, url: %q, timeout: 5m}]", stages.url))
	t.Setenv("REDSTATE_EXECUTOR_PERSISTENCE_REDIS_NAMESPACE", "e2e-live")
	t.Setenv("REDSTATE_EXECUTOR_LIVENESS_TTL", "2s")
	t.Setenv("REDSTATE_EXECUTOR_LIVENESS_INTERVAL", "500ms")
	t.Setenv("REDSTATE_EXECUTOR_ORPHAN_SCAN_INTERVAL", "200ms")
	args := []string{"--redis", rds.URL}
	s1 := startServer(t, args...)
	s2 := startServer(t, args...)

	plan := `{"planId":"plan-live","maxConcurrency":1,"tasks":[{"taskId":"task-live","tenantId":"acme","handler":"steps",` +
		`"stages":["s0","s1","s2"],"retry":{"maxAttempts":1}}]}`
	if code, body, _ := s1.do(t, http.MethodPost, "/v1/executor/plans", plan); code != http.StatusCreated {
		t.Fatalf("create plan: %d %s", code, body)
	}
	select {
	case <-stages.blocked:
	case <-time.After(30 * time.Second):
		t.Fatalf("stage s1 never started\n%s", s1.Logs())
	}
	// Six liveness TTLs with instance 2 scanning every 200 ms: the task stays RUNNING.
	alive := time.Now()
	for time.Since(alive) < 12*time.Second {
		var info executor.TaskStatusInfo
		getJSON(t, s2, "/v1/executor/tasks/task-live", &info)
		if info.Status != executor.TaskRunning {
			t.Fatalf("the task of a live instance became %s: %+v\n%s", info.Status, info, s2.Logs())
		}
		time.Sleep(500 * time.Millisecond)
	}

	s1.kill()
	killedAt := time.Now()
	var info executor.TaskStatusInfo
	eventually(t, 30*time.Second, "the task marked interrupted", func() bool {
		getJSON(t, s2, "/v1/executor/tasks/task-live", &info)
		return info.Status == executor.TaskFailed
	})
	took := time.Since(killedAt)
	t.Logf("orphan found %s after SIGKILL (liveness TTL 2s, scan 200ms; lock TTL 9000s)", took.Round(time.Millisecond))
	if !strings.HasPrefix(info.Reason, executor.ReasonInterrupted) || !strings.Contains(info.Reason, "liveness") {
		t.Fatalf("reason = %q", info.Reason)
	}
	if code, body, _ := s2.do(t, http.MethodPost, "/v1/executor/tenants/acme/retry", `{"fromCheckpoint":true}`); code != http.StatusAccepted {
		t.Fatalf("retry: %d %s", code, body)
	}
	eventually(t, 60*time.Second, "the retried task completed", func() bool {
		getJSON(t, s2, "/v1/executor/tasks/task-live", &info)
		return info.Status == executor.TaskCompleted
	})
}

// TestExecutorControl_FromAnyInstance: a pause and a cancel sent to the instance that does
// not run the task are 202 and take effect on the one that does (routed through Redis).
func TestExecutorControl_FromAnyInstance(t *testing.T) {
	rds := redistest.StartStandalone(t)
	stages := newStageServer(t, "s1")
	t.Setenv("REDSTATE_EXECUTOR_HANDLERS", fmt.Sprintf("[{name: steps, url: %q, timeout: 5m}]", stages.url))
	t.Setenv("REDSTATE_EXECUTOR_PERSISTENCE_REDIS_NAMESPACE", "e2e-ctl")
	args := []string{"--redis", rds.URL}
	s1 := startServer(t, args...)
	s2 := startServer(t, args...)
	plan := `{"planId":"plan-ctl","maxConcurrency":1,"tasks":[{"taskId":"task-ctl","tenantId":"acme","handler":"steps",` +
		`"stages":["s0","s1","s2"],"retry":{"maxAttempts":1}}]}`
	if code, body, _ := s1.do(t, http.MethodPost, "/v1/executor/plans", plan); code != http.StatusCreated {
		t.Fatalf("create plan: %d %s", code, body)
	}
	select {
	case <-stages.blocked:
	case <-time.After(30 * time.Second):
		t.Fatalf("stage s1 never started\n%s", s1.Logs())
	}
	if code, body, _ := s2.do(t, http.MethodPost, "/v1/executor/tenants/acme/pause", ""); code != http.StatusAccepted {
		t.Fatalf("pause on the other instance: %d %s", code, body)
	}
	var info executor.TaskStatusInfo
	eventually(t, 10*time.Second, "the pause request in the projection", func() bool {
		getJSON(t, s2, "/v1/executor/tasks/task-ctl", &info)
		return info.PauseRequested
	})
	if code, body, _ := s2.do(t, http.MethodPost, "/v1/executor/tenants/acme/cancel", ""); code != http.StatusAccepted {
		t.Fatalf("cancel on the other instance: %d %s", code, body)
	}
	eventually(t, 30*time.Second, "the task cancelled", func() bool {
		getJSON(t, s2, "/v1/executor/tasks/task-ctl", &info)
		return info.Status == executor.TaskCancelled
	})
}
