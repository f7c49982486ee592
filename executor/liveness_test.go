package executor_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// countingRegistry counts liveness heartbeats and can stop them (an instance that died: its
// process is gone, so it renews nothing).
type countingRegistry struct {
	executor.TaskRegistry
	beats atomic.Int64
	dead  atomic.Bool
}

func (c *countingRegistry) Heartbeat(ctx context.Context, instance string, ttl time.Duration) error {
	if c.dead.Load() {
		return errors.New("instance is dead")
	}
	c.beats.Add(1)
	return c.TaskRegistry.Heartbeat(ctx, instance, ttl)
}

// deadProjections drops every projection write once its instance is dead (a dead process
// publishes no more task heartbeats).
type deadProjections struct {
	executor.ProjectionStore
	dead *atomic.Bool
}

func (d deadProjections) ApplyTaskEvent(ctx context.Context, ev executor.TaskEvent) error {
	if d.dead.Load() {
		return errors.New("instance is dead")
	}
	return d.ProjectionStore.ApplyTaskEvent(ctx, ev)
}

// countingScans counts the orphan scans of a runner by counting RunningTasks calls.
type countingScans struct {
	executor.TaskRegistry
	scans atomic.Int64
}

func (c *countingScans) RunningTasks(ctx context.Context) ([]string, error) {
	c.scans.Add(1)
	return c.TaskRegistry.RunningTasks(ctx)
}

// livenessRunner starts a runner with fast liveness and orphan scans and the seed's long lock
// TTL, so only liveness can find an orphan quickly.
func livenessRunner(t *testing.T, st executor.Stores, instance string) *executor.Runner {
	t.Helper()
	r, err := executor.New(executor.Options{
		Stores: st, InstanceID: instance, LockTTL: executor.DefaultLockTTL,
		LivenessTTL: 300 * time.Millisecond, LivenessInterval: 50 * time.Millisecond,
		OrphanScanInterval: 20 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond,
		LockRetryInterval: 10 * time.Millisecond, ShutdownTimeout: time.Second,
		DefaultRetry: executor.RetryPolicy{MaxAttempts: 1}, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// waitUntil polls cond, failing after a generous hang guard.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOrphans_AliveOwnerNeverMarked: a stage that runs for many liveness TTLs on instance A is
// never taken for an orphan by instance B's scans while A renews its liveness.
func TestOrphans_AliveOwnerNeverMarked(t *testing.T) {
	st := newMemStores()
	regA := &countingRegistry{TaskRegistry: st.Registry}
	regB := &countingScans{TaskRegistry: st.Registry}
	stA, stB := st.Stores, st.Stores
	stA.Registry, stB.Registry = regA, regB
	a, b := livenessRunner(t, stA, "instance-a"), livenessRunner(t, stB, "instance-b")
	c := newCounter()
	release := make(chan struct{})
	c.block["task-slow/s1"] = release
	defer close(release)
	a.Handle("h", c.handler)
	b.Handle("h", c.handler)
	if _, err := a.CreatePlan(context.Background(), plan("plan-slow", 1, task("task-slow", "tenant-1")), true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "stage s1 to start", func() bool { return c.count("task-slow/s1") == 1 })
	beats, scans := regA.beats.Load(), regB.scans.Load()
	// 20 liveness renewals = 1 s = 3+ liveness TTLs of a running stage, with B scanning all along.
	waitUntil(t, "20 more heartbeats of A and 20 scans of B", func() bool {
		return regA.beats.Load() >= beats+20 && regB.scans.Load() >= scans+20
	})
	info, err := b.TaskStatus(context.Background(), "task-slow")
	if err != nil || info.Status != executor.TaskRunning {
		t.Fatalf("task of a live instance after %d scans: %+v, %v; want RUNNING", regB.scans.Load()-scans, info, err)
	}
}

// TestOrphans_DeadOwnerMarkedFast: when instance A stops renewing its liveness (it died), B marks
// A's RUNNING task FAILED (interrupted) within a few scans, although A's tenant lock has the
// default 9000 s TTL (DefaultLockTTL), and takes the lock over with a new fence so a retry can run.
func TestOrphans_DeadOwnerMarkedFast(t *testing.T) {
	st := newMemStores()
	regA := &countingRegistry{TaskRegistry: st.Registry}
	stA := st.Stores
	stA.Registry = regA
	stA.Projections = deadProjections{ProjectionStore: st.Projections, dead: &regA.dead}
	a, b := livenessRunner(t, stA, "instance-a"), livenessRunner(t, st.Stores, "instance-b")
	c := newCounter()
	release := make(chan struct{})
	c.block["task-d/s1"] = release
	defer close(release)
	a.Handle("h", c.handler)
	b.Handle("h", c.handler)
	if _, err := a.CreatePlan(context.Background(), plan("plan-d", 1, task("task-d", "tenant-d")), true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "stage s1 to start", func() bool { return c.count("task-d/s1") == 1 })
	regA.dead.Store(true)
	var info executor.TaskStatusInfo
	waitUntil(t, "B to mark the task interrupted", func() bool {
		info, _ = b.TaskStatus(context.Background(), "task-d")
		return info.Status == executor.TaskFailed
	})
	if !strings.HasPrefix(info.Reason, executor.ReasonInterrupted) || !strings.Contains(info.Reason, "instance-a") {
		t.Fatalf("reason = %q", info.Reason)
	}
}

// TestControl_FromAnyInstance: pause and cancel sent to instance B act on a task that instance
// A runs (routed through the store to A's inbox), with the effect in the projection.
func TestControl_FromAnyInstance(t *testing.T) {
	st := newMemStores()
	a, b := livenessRunner(t, st.Stores, "instance-a"), livenessRunner(t, st.Stores, "instance-b")
	c := newCounter()
	release := make(chan struct{})
	c.block["task-c/s1"] = release
	a.Handle("h", c.handler)
	b.Handle("h", c.handler)
	ctx := context.Background()
	if _, err := a.CreatePlan(ctx, plan("plan-c", 1, task("task-c", "tenant-c")), true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "stage s1 to start", func() bool { return c.count("task-c/s1") == 1 })
	if err := b.Pause(ctx, "task-c"); err != nil {
		t.Fatalf("pause through another instance: %v", err)
	}
	waitUntil(t, "the pause request in the projection", func() bool {
		info, _ := b.TaskStatus(ctx, "task-c")
		return info.PauseRequested
	})
	close(release) // s1 finishes; the task pauses at the stage boundary
	waitUntil(t, "the task paused", func() bool {
		info, _ := b.TaskStatus(ctx, "task-c")
		return info.Status == executor.TaskPaused
	})
	if c.count("task-c/s2") != 0 {
		t.Fatal("s2 ran although the task was paused")
	}
	// Resume from B runs the rest on B (the task is idle everywhere now).
	if err := b.Resume(ctx, "task-c"); err != nil {
		t.Fatalf("resume: %v", err)
	}
	waitStatus(t, b, "task-c", executor.TaskCompleted)
}

// TestControl_CancelRoutedToOwner: cancel sent to B cancels the stage A runs.
func TestControl_CancelRoutedToOwner(t *testing.T) {
	st := newMemStores()
	a, b := livenessRunner(t, st.Stores, "instance-a"), livenessRunner(t, st.Stores, "instance-b")
	c := newCounter()
	c.block["task-x/s0"] = make(chan struct{}) // never released: only a cancel ends it
	a.Handle("h", c.handler)
	b.Handle("h", c.handler)
	ctx := context.Background()
	if _, err := a.CreatePlan(ctx, plan("plan-x", 1, task("task-x", "tenant-x")), true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "stage s0 to start", func() bool { return c.count("task-x/s0") == 1 })
	if err := b.Cancel(ctx, "task-x"); err != nil {
		t.Fatalf("cancel through another instance: %v", err)
	}
	waitStatus(t, b, "task-x", executor.TaskCancelled)
}

// corruptCheckpoints answers every Get as a stored value that does not decode.
type corruptCheckpoints struct{ executor.CheckpointStore }

func (corruptCheckpoints) Get(context.Context, string) (executor.Checkpoint, error) {
	return executor.Checkpoint{}, redstate.Errorf(redstate.EINTERNAL, "stored checkpoint does not start with a version")
}

// TestTaskStatus_UnreadableCheckpointStillShown: a checkpoint that does not decode made the
// task and tenant queries 500; now the task is shown with checkpoint "unreadable" and why.
func TestTaskStatus_UnreadableCheckpointStillShown(t *testing.T) {
	st := newMemStores()
	r := newRunner(t, st.Stores)
	c := newCounter()
	r.Handle("h", c.handler)
	ctx := context.Background()
	if _, err := r.CreatePlan(ctx, plan("plan-u", 1, task("task-u", "tenant-u")), true); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "task-u", executor.TaskCompleted)
	broken := st.Stores
	broken.Checkpoints = corruptCheckpoints{st.Stores.Checkpoints}
	q := newRunner(t, broken)
	info, err := q.TaskStatus(ctx, "task-u")
	if err != nil || info.Checkpoint != executor.CheckpointUnreadable || !strings.Contains(info.CheckpointError, "version") || info.HasCheckpoint {
		t.Fatalf("TaskStatus with an unreadable checkpoint = %+v, %v", info, err)
	}
	if _, err := q.PlanStatus(ctx, "plan-u"); err != nil {
		t.Fatalf("PlanStatus with an unreadable checkpoint: %v", err)
	}
}
