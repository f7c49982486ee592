package executor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// losingLocks is a TenantLocks whose renewals fail as if another holder had taken the lock,
// once lose is set.
type losingLocks struct {
	executor.TenantLocks
	lose atomic.Bool
}

func (l *losingLocks) Renew(ctx context.Context, tenantID, token string, ttl time.Duration) error {
	if l.lose.Load() {
		return redstate.Errorf(redstate.ECONFLICT, "lock of %s taken over", tenantID)
	}
	return l.TenantLocks.Renew(ctx, tenantID, token, ttl)
}

// A holder that lost its tenant lock stops heartbeating at once: otherwise its next heartbeat
// (a newer sequence number) could put a task that its new owner already finished back to
// RUNNING.
func TestRunner_LockLossStopsHeartbeats(t *testing.T) {
	st := newMemStores()
	locks := &losingLocks{TenantLocks: st.Locks}
	st.Stores.Locks = locks
	r, err := executor.New(executor.Options{
		Stores: st.Stores, LockTTL: 300 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond,
		OrphanScanInterval: time.Hour, LockRetryInterval: 10 * time.Millisecond, ShutdownTimeout: 2 * time.Second,
		DefaultRetry: executor.RetryPolicy{MaxAttempts: 1}, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var progress atomic.Int64
	r.OnEvent(func(e executor.Event) {
		if e.Type == executor.EventTaskProgress {
			progress.Add(1)
		}
	})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	release := make(chan struct{})
	defer close(release)
	r.Handle("h", func(ctx context.Context, _ executor.StageRequest) (map[string]string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	if _, err := r.CreatePlan(context.Background(), plan("p", 1, task("t", "a")), true); err != nil {
		t.Fatal(err)
	}
	for progress.Load() < 3 { // heartbeats flow while the lock is held
		time.Sleep(5 * time.Millisecond)
	}
	locks.lose.Store(true)
	time.Sleep(300 * time.Millisecond) // the next renewal (every TTL/3) fails and reports the loss
	before := progress.Load()
	time.Sleep(200 * time.Millisecond) // 20 heartbeat intervals
	if after := progress.Load(); after != before {
		t.Fatalf("heartbeats went on after the lock was lost: %d then %d", before, after)
	}
}
