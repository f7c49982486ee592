package executor_test

import (
	"context"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// TestRunnerAudit_CompletedTaskCannotBeRetried: docs/executor.md — retry of a COMPLETED task by id
// is ECONFLICT (409); by tenant it is ENOTFOUND (404, the index entry was deleted); no stage runs again.
func TestRunnerAudit_CompletedTaskCannotBeRetried(t *testing.T) {
	st := newMemStores()
	r := newRunner(t, st.Stores)
	c := newCounter()
	r.Handle("h", c.handler)
	ctx := context.Background()
	if _, err := r.CreatePlan(ctx, plan("p", 1, task("t", "a")), true); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "t", executor.TaskCompleted)
	for _, from := range []bool{true, false} {
		if err := r.Retry(ctx, "t", from); !redstate.IsCode(err, redstate.ECONFLICT) {
			t.Fatalf("Retry(completed, fromCheckpoint=%v) = %v, want ECONFLICT", from, err)
		}
	}
	// The tenant index entry is gone on COMPLETED, so retry by tenant is not_found (HTTP 404).
	if _, err := r.RetryByTenant(ctx, "a", true); !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("RetryByTenant(completed) = %v, want ENOTFOUND", err)
	}
	for _, s := range stages4 {
		if n := c.count("t/" + s); n != 1 {
			t.Fatalf("stage %s ran %d times, want 1", s, n)
		}
	}
}
