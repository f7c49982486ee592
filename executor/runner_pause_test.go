package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
)

// A pause requested while a failed stage waits for its retry backoff takes effect at once
// (the backoff is a stage boundary), not after the whole backoff.
func TestRunner_PauseDuringRetryBackoff(t *testing.T) {
	st := newMemStores()
	r := newRunner(t, st.Stores)
	c := newCounter()
	c.fail["t/s1"] = 1
	r.Handle("h", c.handler)
	ctx := context.Background()
	td := task("t", "a")
	td.Retry = executor.RetryPolicy{MaxAttempts: 3, Backoff: 20 * time.Second, MaxBackoff: 20 * time.Second}
	if _, err := r.CreatePlan(ctx, plan("p", 1, td), true); err != nil {
		t.Fatal(err)
	}
	for c.count("t/s1") == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // s1 failed; the runner waits out the backoff
	if err := r.Pause(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		info, err := r.TaskStatus(ctx, "t")
		if err == nil && info.Status == executor.TaskPaused && !info.LockHeld {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause during the retry backoff did not take effect: %+v (%v)", info, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.Resume(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "t", executor.TaskCompleted)
	if n := c.count("t/s1"); n != 2 {
		t.Fatalf("s1 ran %d times, want 2", n)
	}
}
