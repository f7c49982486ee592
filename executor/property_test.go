package executor_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// call is one stage execution waiting for the test's decision.
type call struct {
	req   executor.StageRequest
	reply chan bool
}

// TestProperty_CheckpointNeverGoesBackwards drives one task through a random interleaving of
// stage completions and failures, pause, resume, retry (from the checkpoint or from the start)
// and stale checkpoint writes by a second writer. Invariants: the checkpoint's
// lastCompletedStageIndex never decreases (except by a retry from the start, which removes it
// on purpose); every stale write is rejected; the projection's lastCompletedStageIndex catches
// up with the checkpoint's (it is written right after the checkpoint); and after
// the task is driven to the end, projection, checkpoint, tenant index and running set agree
// (COMPLETED, all stages, no checkpoint, no index entry, not running).
func TestProperty_CheckpointNeverGoesBackwards(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		st := newMemStores()
		r, err := executor.New(executor.Options{Stores: st.Stores, LockTTL: 5 * time.Second, HeartbeatInterval: 5 * time.Millisecond,
			OrphanScanInterval: time.Hour, LockRetryInterval: time.Millisecond, ShutdownTimeout: time.Second,
			DefaultRetry: executor.RetryPolicy{MaxAttempts: 1}, Logger: quietLogger()})
		if err != nil {
			rt.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = r.Run(ctx); close(done) }()
		calls := make(chan *call, 16)
		var pending *call
		defer func() {
			if pending != nil {
				pending.reply <- false
			}
			cancel()
			go func() {
				for c := range calls {
					c.reply <- false
				}
			}()
			<-done
			close(calls)
		}()
		r.Handle("h", func(ctx context.Context, req executor.StageRequest) (map[string]string, error) {
			c := &call{req: req, reply: make(chan bool, 1)}
			calls <- c
			select {
			case ok := <-c.reply:
				if !ok {
					return nil, redstate.Errorf(redstate.EINTERNAL, "stage failed")
				}
				out := req.ContextData
				out[req.Stage] = "ok"
				return out, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		n := rapid.IntRange(1, 5).Draw(rt, "stages")
		names := make([]string, n)
		for i := range names {
			names[i] = string(rune('a' + i))
		}
		if _, err := r.CreatePlan(ctx, executor.PlanDef{PlanID: "p", MaxConcurrency: 1,
			Tasks: []executor.TaskDef{{TaskID: "t", TenantID: "x", Stages: names, Handler: "h"}}}, true); err != nil {
			rt.Fatal(err)
		}

		// settle waits until a stage call is pending or the task is at rest (not running, lock free).
		settle := func() {
			if pending != nil {
				return
			}
			// Generous: under a loaded 2-core CI machine a runner step can take seconds.
			deadline := time.Now().Add(20 * time.Second)
			for {
				select {
				case c := <-calls:
					pending = c
					return
				default:
				}
				info, err := r.TaskStatus(context.Background(), "t")
				if err == nil && info.Status != executor.TaskRunning && !info.LockHeld {
					// At rest; a just-launched run may still be on its way to the lock.
					time.Sleep(2 * time.Millisecond)
					select {
					case c := <-calls:
						pending = c
						return
					default:
					}
					if info2, _ := r.TaskStatus(context.Background(), "t"); info2.Status == info.Status && !info2.LockHeld {
						return
					}
				}
				if time.Now().After(deadline) {
					rt.Fatalf("task never settled: %+v %v", info, err)
				}
				time.Sleep(time.Millisecond)
			}
		}
		lastIdx, seenVersion := -1, int64(0)
		// doomedVersion is the version of the checkpoint a retry from the start is still to
		// remove (0: none). The retried run removes it when it starts, which can be well after
		// Retry returned: it waits for the lock, and a pause that comes first holds it back
		// until a resume. Until then the old checkpoint is still there and is not a regression.
		doomedVersion := int64(0)
		check := func(what string) {
			cp, err := st.Checkpoints.Get(context.Background(), "t")
			idx := -1
			switch {
			case err == nil && doomedVersion != 0 && cp.Version == doomedVersion:
				// Not removed yet: counts as removed.
			case err == nil:
				doomedVersion = 0
				idx = cp.LastCompletedStageIndex
				if seenVersion == 0 {
					seenVersion = cp.Version
				}
			case redstate.IsCode(err, redstate.ENOTFOUND):
				doomedVersion = 0
			default:
				rt.Fatal(err)
			}
			p, err := st.Projections.GetTask(context.Background(), "t")
			if err != nil {
				rt.Fatal(err)
			}
			if idx == -1 && (p.Status == executor.TaskCompleted || p.Status == executor.TaskCancelled) {
				lastIdx = -1 // removed on completion, as designed
				return
			}
			if idx < lastIdx {
				rt.Fatalf("after %s the checkpoint went backwards: %d < %d", what, idx, lastIdx)
			}
			lastIdx = idx
			// The runner writes the checkpoint first and the projection right after it, so a
			// read between the two sees the projection one stage behind: it must catch up.
			for deadline := time.Now().Add(10 * time.Second); p.LastCompletedStageIndex < idx; {
				if time.Now().After(deadline) {
					rt.Fatalf("after %s projection index %d stayed below the checkpoint's %d", what, p.LastCompletedStageIndex, idx)
				}
				time.Sleep(time.Millisecond)
				if p, err = st.Projections.GetTask(context.Background(), "t"); err != nil {
					rt.Fatal(err)
				}
			}
		}

		steps := rapid.IntRange(0, 25).Draw(rt, "steps")
		for range steps {
			settle()
			switch op := rapid.IntRange(0, 6).Draw(rt, "op"); op {
			case 0, 1: // a stage completes
				if pending != nil {
					pending.reply <- true
					pending = nil
				}
			case 2: // a stage fails
				if pending != nil {
					pending.reply <- false
					pending = nil
				}
			case 3:
				_ = r.Pause(ctx, "t")
			case 4:
				_ = r.Resume(ctx, "t")
			case 5:
				from := rapid.Bool().Draw(rt, "fromCheckpoint")
				if from {
					_ = r.Retry(ctx, "t", true)
					break
				}
				var doomed int64
				if cp, err := st.Checkpoints.Get(context.Background(), "t"); err == nil {
					doomed = cp.Version
				}
				if err := r.Retry(ctx, "t", false); err == nil {
					lastIdx, seenVersion = -1, 0 // removed on purpose, when the retried run starts
					doomedVersion = doomed
				}
			case 6: // a stale writer: an old version, or the current one with a lower index
				cur, err := st.Checkpoints.Get(context.Background(), "t")
				if err != nil {
					break
				}
				if seenVersion != 0 && seenVersion != cur.Version {
					if _, err := st.Checkpoints.Put(context.Background(), "t", executor.Checkpoint{LastCompletedStageIndex: -1}, seenVersion); !redstate.IsCode(err, redstate.EPRECONDITION) {
						rt.Fatalf("stale-version write: %v", err)
					}
				}
				if cur.LastCompletedStageIndex > 0 {
					if _, err := st.Checkpoints.Put(context.Background(), "t", executor.Checkpoint{LastCompletedStageIndex: cur.LastCompletedStageIndex - 1}, cur.Version); !redstate.IsCode(err, redstate.ECONFLICT) {
						rt.Fatalf("backwards write: %v", err)
					}
				}
			}
			time.Sleep(time.Millisecond)
			check("step")
		}

		// Drive to the end: complete every stage, resume or retry from the checkpoint as needed.
		for i := 0; ; i++ {
			if i > 200 {
				rt.Fatal("task did not complete")
			}
			settle()
			if pending != nil {
				pending.reply <- true
				pending = nil
				check("drain")
				continue
			}
			info, _ := r.TaskStatus(context.Background(), "t")
			switch info.Status {
			case executor.TaskCompleted:
				if info.LastCompletedStageIndex != n-1 || info.HasCheckpoint {
					rt.Fatalf("completed: %+v", info)
				}
				if _, err := st.Index.Get(context.Background(), "x"); !redstate.IsCode(err, redstate.ENOTFOUND) {
					rt.Fatalf("tenant index of a completed task: %v", err)
				}
				if ids, _ := st.Registry.RunningTasks(context.Background()); len(ids) != 0 {
					rt.Fatalf("running set %v", ids)
				}
				if p, _ := r.PlanStatus(context.Background(), "p"); p.Status != executor.PlanCompleted {
					rt.Fatalf("plan %s", p.Status)
				}
				return
			case executor.TaskPaused:
				_ = r.Resume(ctx, "t")
			default:
				_ = r.Retry(ctx, "t", true)
			}
			time.Sleep(time.Millisecond)
		}
	})
}
