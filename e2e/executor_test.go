package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/redistest"
)

// stageServer serves the webhook stage handler "steps": it counts executions per stage,
// records the fencing tokens it saw, sleeps a little per stage, and holds the first execution
// of blockStage until the caller goes away (so the executor can be killed mid-stage).
type stageServer struct {
	mu         sync.Mutex
	runs       map[string]int
	fences     []int64
	blockStage string
	blocked    chan struct{}
	url        string
}

func newStageServer(t *testing.T, blockStage string) *stageServer {
	t.Helper()
	s := &stageServer{runs: map[string]int{}, blockStage: blockStage, blocked: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/stage"
	return s
}

func (s *stageServer) serve(w http.ResponseWriter, r *http.Request) {
	var req executor.StageRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.runs[req.Stage]++
	n := s.runs[req.Stage]
	if k := len(s.fences); k == 0 || s.fences[k-1] != req.FencingToken {
		s.fences = append(s.fences, req.FencingToken)
	}
	s.mu.Unlock()
	if req.Stage == s.blockStage && n == 1 {
		close(s.blocked)
		select {
		case <-r.Context().Done(): // the executor died
		case <-time.After(time.Minute):
		}
		return
	}
	time.Sleep(100 * time.Millisecond)
	ctxData := req.ContextData
	ctxData[req.Stage] = fmt.Sprint(req.FencingToken)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"contextData": ctxData})
}

func (s *stageServer) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.runs {
		out[k] = v
	}
	return out
}

// TestExecutorRestart_KilledMidPlanRetriesFromCheckpoint: a task whose process died resumes from
// its last checkpoint. An executor process with a 3 s tenant lock is SIGKILLed while stage s3 of a
// 6-stage task runs (s0..s2 completed and checkpointed); a new process shows the task through the
// query API (RUNNING, checkpoint present), marks it FAILED "interrupted" once the dead process's
// lock has expired, and a retry from the checkpoint runs only s3..s5: per-stage execution counts
// are s0..s2 = 1, s3 = 2 (it was running at the kill), s4..s5 = 1. The new holder's fencing token
// is higher than the dead one's.
func TestExecutorRestart_KilledMidPlanRetriesFromCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("restart test with real processes: not under -short")
	}
	rds := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	stages := newStageServer(t, "s3")
	t.Setenv("REDSTATE_EXECUTOR_HANDLERS", fmt.Sprintf("[{name: steps, url: %q, timeout: 30s}]", stages.url))
	t.Setenv("REDSTATE_EXECUTOR_PERSISTENCE_REDIS_TTL_LOCK", "3s")
	t.Setenv("REDSTATE_EXECUTOR_PERSISTENCE_REDIS_NAMESPACE", "e2e-executor")
	t.Setenv("REDSTATE_EXECUTOR_ORPHAN_SCAN_INTERVAL", "300ms")
	t.Setenv("REDSTATE_EXECUTOR_HEARTBEAT_INTERVAL", "200ms")
	args := []string{"--redis", rds.URL}

	s1 := startServer(t, args...)
	plan := `{"planId":"plan-e2e","maxConcurrency":2,"tasks":[{"taskId":"task-e2e","tenantId":"acme","handler":"steps",` +
		`"stages":["s0","s1","s2","s3","s4","s5"],"contextData":{"origin":"e2e"},"retry":{"maxAttempts":1}}]}`
	if code, body, _ := s1.do(t, "POST", "/v1/executor/plans", plan); code != http.StatusCreated {
		t.Fatalf("create plan: %d %s", code, body)
	}
	select {
	case <-stages.blocked:
	case <-time.After(30 * time.Second):
		t.Fatalf("stage s3 never started: %v\n%s", stages.counts(), s1.Logs())
	}
	var before executor.TaskStatusInfo
	getJSON(t, s1, "/v1/executor/tenants/acme/task", &before)
	if before.Status != executor.TaskRunning || before.LastCompletedStageIndex != 2 || !before.LockHeld {
		t.Fatalf("before the kill: %+v", before)
	}
	s1.kill()
	killedAt := time.Now()

	s2 := startServer(t, args...)
	var info executor.TaskStatusInfo
	getJSON(t, s2, "/v1/executor/tenants/acme/task", &info)
	if info.TaskID != "task-e2e" || info.LastCompletedStageIndex != 2 || !info.HasCheckpoint || info.CurrentStage != "s3" {
		t.Fatalf("after the restart: %+v", info)
	}
	if info.Status == executor.TaskRunning && time.Since(killedAt) < 2*time.Second && !info.LockHeld {
		t.Fatalf("lock gone right after the kill (TTL 3s): %+v", info)
	}
	var hc map[string]any
	getJSON(t, s2, "/v1/executor/tenants/acme/checkpoint", &hc)
	if hc["hasCheckpoint"] != true {
		t.Fatalf("checkpoint: %v", hc)
	}
	// Retrying a task still shown RUNNING is refused.
	if code, body, _ := s2.do(t, "POST", "/v1/executor/tenants/acme/retry", `{"fromCheckpoint":true}`); code != http.StatusConflict && info.Status == executor.TaskRunning {
		t.Fatalf("retry of a RUNNING task: %d %s", code, body)
	}
	eventually(t, 20*time.Second, "the task marked interrupted", func() bool {
		getJSON(t, s2, "/v1/executor/tenants/acme/task", &info)
		return info.Status == executor.TaskFailed
	})
	if !strings.HasPrefix(info.Reason, executor.ReasonInterrupted) || info.LastCompletedStageIndex != 2 {
		t.Fatalf("interrupted: %+v", info)
	}
	if since := time.Since(killedAt); since < 2500*time.Millisecond {
		t.Fatalf("marked interrupted %s after the kill, before the 3s lock could expire", since)
	}
	if code, body, _ := s2.do(t, "POST", "/v1/executor/tenants/acme/retry", `{"fromCheckpoint":true}`); code != http.StatusAccepted {
		t.Fatalf("retry: %d %s\n%s", code, body, s2.Logs())
	}
	eventually(t, 30*time.Second, "the retried task completed", func() bool {
		getJSON(t, s2, "/v1/executor/tasks/task-e2e", &info)
		return info.Status == executor.TaskCompleted
	})
	want := map[string]int{"s0": 1, "s1": 1, "s2": 1, "s3": 2, "s4": 1, "s5": 1}
	got := stages.counts()
	for s, n := range want {
		if got[s] != n {
			t.Fatalf("stage executions %v, want %v", got, want)
		}
	}
	var plan2 executor.PlanStatusInfo
	getJSON(t, s2, "/v1/executor/plans/plan-e2e", &plan2)
	if plan2.Status != executor.PlanCompleted || plan2.Progress != 1 {
		t.Fatalf("plan: %+v", plan2.PlanProjection)
	}
	stages.mu.Lock()
	fences := append([]int64(nil), stages.fences...)
	stages.mu.Unlock()
	if len(fences) != 2 || fences[1] <= fences[0] {
		t.Fatalf("fencing tokens %v: want two holders, the second higher", fences)
	}
	code, metrics, _ := s2.do(t, "GET", "/metrics", "")
	if code != http.StatusOK || !strings.Contains(string(metrics), "redstate_executor_orphans_total 1") {
		t.Fatalf("metrics: %d\n%s", code, grepLines(string(metrics), "redstate_executor_"))
	}
	s2.stop(t)
}

func getJSON(t *testing.T, s *server, path string, v any) {
	t.Helper()
	code, body, _ := s.do(t, "GET", path, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
