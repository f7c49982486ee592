package executor

import (
	"context"
	"time"
)

// launch starts a goroutine that waits for a slot and the tenant lock, then runs t. It
// returns false if t is already waiting or running, or the runner is stopping.
func (r *Runner) launch(t *taskRun, fromCheckpoint bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.state != stateIdle || r.stopping() {
		return false
	}
	t.state = stateWaiting
	t.fromCheckpoint = fromCheckpoint
	t.pauseRequested = false
	r.wg.Add(1)
	go r.drive(t)
	return true
}

// drive waits for a plan slot and the tenant lock, then runs the task.
func (r *Runner) drive(t *taskRun) {
	defer r.wg.Done()
	ctx := context.Background()
	for {
		if r.stopping() {
			r.setState(t, stateIdle)
			return
		}
		if stop, ev := r.checkWaiting(t); stop {
			if ev != "" {
				r.publishStopped(ctx, t, ev)
			}
			return
		}
		select {
		case t.plan.sem <- struct{}{}:
		case <-t.wake:
			continue
		case <-r.stopCh:
			continue
		}
		lease, ok, err := r.st.Locks.TryAcquire(ctx, t.spec.TenantID, t.spec.TaskID, r.opts.LockTTL)
		if err == nil && ok {
			r.runLocked(ctx, t, lease)
			<-t.plan.sem
			return
		}
		<-t.plan.sem
		if err != nil {
			r.log.Warn("executor: tenant lock unavailable; retrying", "task", t.spec.TaskID, "tenant", t.spec.TenantID, "error", err)
		}
		select {
		case <-time.After(r.opts.LockRetryInterval):
		case <-t.wake:
		case <-r.stopCh:
		}
	}
}

// checkWaiting applies a pause or cancel requested while t waits: it returns stop=true and
// the event to publish ("" when none).
func (r *Runner) checkWaiting(t *taskRun) (bool, TaskEventType) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case t.cancelled:
		t.state = stateIdle
		return true, EventTaskCancelled
	case t.pauseRequested:
		t.state, t.pauseRequested = stateIdle, false
		return true, EventTaskPaused
	}
	return false, ""
}

// publishStopped publishes ev for a task stopped before it ran (paused or cancelled while it
// waited), removes a cancelled task's checkpoint and refreshes its plan.
func (r *Runner) publishStopped(ctx context.Context, t *taskRun, ev TaskEventType) {
	_ = r.emitTask(ctx, t, ev, "")
	if ev == EventTaskCancelled {
		r.finishCleanup(ctx, t, true)
	}
	r.refreshPlan(ctx, t.spec.PlanID)
}

// setState sets t's local state.
func (r *Runner) setState(t *taskRun, s localState) {
	r.mu.Lock()
	t.state = s
	r.mu.Unlock()
}
