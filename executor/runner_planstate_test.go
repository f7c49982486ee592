package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
)

// waitPlan waits until the plan reads want, failing after 10 s with what it reads.
func waitPlan(t *testing.T, r *executor.Runner, planID string, want executor.PlanStatus) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, err := r.PlanStatus(context.Background(), planID)
		if err == nil && ps.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan %s: want %s, have %s (err %v)", planID, want, ps.Status, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunner_PlanRunningWhileAFailedTaskIsRetried: a plan that failed reads RUNNING again as
// soon as its failed task is retried and runs, not FAILED until the retry ends; a paused plan
// reads RUNNING once its task is resumed.
func TestRunner_PlanRunningWhileAFailedTaskIsRetried(t *testing.T) {
	st := newMemStores()
	r := newRunner(t, st.Stores)
	c := newCounter()
	c.fail["t/s1"] = 1
	gate := make(chan struct{})
	c.mu.Lock()
	c.block["t/s2"] = gate
	c.mu.Unlock()
	r.Handle("h", c.handler)
	ctx := context.Background()
	if _, err := r.CreatePlan(ctx, plan("p", 1, task("t", "a")), true); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "t", executor.TaskFailed)
	waitPlan(t, r, "p", executor.PlanFailed)
	if err := r.Retry(ctx, "t", true); err != nil {
		t.Fatal(err)
	}
	for c.count("t/s2") == 0 { // the retry runs s1 again, then waits in s2
		time.Sleep(time.Millisecond)
	}
	if info, _ := r.TaskStatus(ctx, "t"); info.Status != executor.TaskRunning {
		t.Fatalf("task %s during its retry, want RUNNING", info.Status)
	}
	waitPlan(t, r, "p", executor.PlanRunning)

	if err := r.Pause(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	close(gate) // s2 ends; the pause takes effect before s3
	waitStatus(t, r, "t", executor.TaskPaused)
	waitPlan(t, r, "p", executor.PlanPaused)
	block := make(chan struct{})
	c.mu.Lock()
	c.block["t/s3"] = block
	c.mu.Unlock()
	if err := r.Resume(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	for c.count("t/s3") == 0 {
		time.Sleep(time.Millisecond)
	}
	waitPlan(t, r, "p", executor.PlanRunning)
	close(block)
	waitStatus(t, r, "t", executor.TaskCompleted)
	waitPlan(t, r, "p", executor.PlanCompleted)
}
