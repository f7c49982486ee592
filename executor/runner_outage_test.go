package executor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// outageProjections is a ProjectionStore that goes down (every ApplyTaskEvent fails with
// EUNAVAILABLE, as during a Redis outage or failover) from the first event of type trigger on,
// until down is cleared; it goes down once only.
type outageProjections struct {
	executor.ProjectionStore
	trigger   executor.TaskEventType
	down      atomic.Bool
	triggered atomic.Bool
}

func (p *outageProjections) ApplyTaskEvent(ctx context.Context, ev executor.TaskEvent) error {
	if ev.Type == p.trigger && p.triggered.CompareAndSwap(false, true) {
		p.down.Store(true)
	}
	if p.down.Load() {
		return redstate.Errorf(redstate.EUNAVAILABLE, "projection store down")
	}
	return p.ProjectionStore.ApplyTaskEvent(ctx, ev)
}

// A task whose outcome cannot be published because the store is down (TaskStarted fails, so
// the run fails; or TaskCompleted fails) must not stay CREATED or RUNNING at a live runner:
// the runner keeps publishing the outcome until the store is back.
func TestRunner_OutcomePublishedAfterOutage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger executor.TaskEventType
		ttl     time.Duration       // the tenant lock's TTL; shorter than the outage: the lease expires
		want    executor.TaskStatus // published once the outage ends
	}{
		{"StartedLost", executor.EventTaskStarted, 2 * time.Second, executor.TaskFailed},
		{"CompletedLost", executor.EventTaskCompleted, 2 * time.Second, executor.TaskCompleted},
		{"CompletedLostLockExpired", executor.EventTaskCompleted, 300 * time.Millisecond, executor.TaskCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStores()
			proj := &outageProjections{ProjectionStore: st.Projections, trigger: tc.trigger}
			st.Stores.Projections = proj
			r, err := executor.New(executor.Options{
				Stores: st.Stores, LockTTL: tc.ttl, HeartbeatInterval: 50 * time.Millisecond, OrphanScanInterval: time.Hour,
				LockRetryInterval: 10 * time.Millisecond, ShutdownTimeout: 2 * time.Second,
				DefaultRetry: executor.RetryPolicy{MaxAttempts: 1}, Logger: quietLogger(),
			})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = r.Run(runCtx); close(done) }()
			t.Cleanup(func() { stop(); <-done })
			c := newCounter()
			r.Handle("h", c.handler)
			if _, err := r.CreatePlan(context.Background(), plan("p", 1, task("t", "a")), true); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !proj.down.Load() {
				if time.Now().After(deadline) {
					t.Fatalf("the outage never started")
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond) // longer than the publication's own retries
			proj.down.Store(false)
			waitStatus(t, r, "t", tc.want)
			if tc.want == executor.TaskFailed {
				if err := r.Retry(context.Background(), "t", true); err != nil {
					t.Fatal(err)
				}
				waitStatus(t, r, "t", executor.TaskCompleted)
			}
		})
	}
}
