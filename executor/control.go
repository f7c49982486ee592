package executor

import (
	"context"

	"github.com/redstate/redstate"
)

// Pause asks a task to pause. A waiting or created task pauses at once; a running one at its
// next stage boundary (its projection shows pauseRequested until then). Errors: ENOTFOUND,
// ECONFLICT (already paused or finished, or running on another instance), EUNAVAILABLE.
func (r *Runner) Pause(ctx context.Context, taskID string) error {
	t, err := r.loadTask(ctx, taskID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	state, status := t.state, t.status
	switch {
	case t.cancelled:
		r.mu.Unlock()
		return redstate.Errorf(redstate.ECONFLICT, "task %s is being cancelled", taskID)
	case state == stateWaiting:
		t.pauseRequested = true
		r.mu.Unlock()
		t.poke()
		return nil
	case state == stateRunning:
		t.pauseRequested = true
		r.mu.Unlock()
		t.poke()            // a run waiting out a stage's retry backoff pauses at once
		r.heartbeat(ctx, t) // publishes pauseRequested=true
		return nil
	case status == TaskCreated:
		r.mu.Unlock()
		if err := r.emitTask(ctx, t, EventTaskPaused, ""); err != nil {
			return err
		}
		r.refreshPlan(ctx, t.spec.PlanID)
		return nil
	}
	r.mu.Unlock()
	return redstate.Errorf(redstate.ECONFLICT, "task %s is %s%s; only created, waiting or running tasks can be paused", taskID, status, elsewhere(status))
}

// Resume resumes a paused task from its checkpoint, or withdraws a pause request that has not
// taken effect yet. Errors: ENOTFOUND, ECONFLICT, EUNAVAILABLE.
func (r *Runner) Resume(ctx context.Context, taskID string) error {
	t, err := r.loadTask(ctx, taskID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	state, status, pending := t.state, t.status, t.pauseRequested
	if state != stateIdle && pending {
		t.pauseRequested = false
		r.mu.Unlock()
		if state == stateRunning {
			r.heartbeat(ctx, t)
		}
		return nil
	}
	r.mu.Unlock()
	if state != stateIdle || status != TaskPaused {
		return redstate.Errorf(redstate.ECONFLICT, "task %s is %s%s; only paused tasks can be resumed", taskID, status, elsewhere(status))
	}
	if !r.launch(t, true) {
		return redstate.Errorf(redstate.ECONFLICT, "task %s is already running or the executor is stopping", taskID)
	}
	return nil
}

// Cancel cancels a task for good: a running stage's context is cancelled, the task becomes
// CANCELLED, its checkpoint is removed and its tenant index entry deleted. Errors: ENOTFOUND,
// ECONFLICT (finished, or running on another instance), EUNAVAILABLE.
func (r *Runner) Cancel(ctx context.Context, taskID string) error {
	t, err := r.loadTask(ctx, taskID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	state, status := t.state, t.status
	if state != stateIdle {
		t.cancelled = true
		if t.stageCancel != nil {
			t.stageCancel()
		}
		r.mu.Unlock()
		t.poke()
		return nil
	}
	r.mu.Unlock()
	if status == TaskCompleted || status == TaskCancelled || status == TaskRunning {
		return redstate.Errorf(redstate.ECONFLICT, "task %s is %s%s; it cannot be cancelled", taskID, status, elsewhere(status))
	}
	r.mu.Lock()
	t.cancelled = true
	r.mu.Unlock()
	r.saveReason(ctx, t, "cancelled")
	if err := r.emitTask(ctx, t, EventTaskCancelled, "cancelled"); err != nil {
		return err
	}
	r.finishCleanup(ctx, t, true)
	r.refreshPlan(ctx, t.spec.PlanID)
	return nil
}

// Retry runs a FAILED (or, after a restart, a PAUSED or never started) task again on this
// instance: from its checkpoint (completed stages are skipped, the context data restored) or
// from the start (the checkpoint is removed). The task's retry policy applies afresh.
// Errors: ENOTFOUND, ECONFLICT (running, completed or cancelled), EUNAVAILABLE.
func (r *Runner) Retry(ctx context.Context, taskID string, fromCheckpoint bool) error {
	t, err := r.loadTask(ctx, taskID)
	if err != nil {
		return err
	}
	// The projection is authoritative across instances.
	p, err := r.st.Projections.GetTask(ctx, taskID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if t.state == stateIdle {
		t.status = p.Status
		t.lastCompleted = p.LastCompletedStageIndex
	}
	state := t.state
	r.mu.Unlock()
	switch {
	case state != stateIdle:
		return redstate.Errorf(redstate.ECONFLICT, "task %s is waiting or running on this instance", taskID)
	case p.Status == TaskRunning:
		return redstate.Errorf(redstate.ECONFLICT, "task %s is RUNNING on another instance; if that instance died, the task is marked FAILED (interrupted) once its tenant lock expires, and can be retried then", taskID)
	case p.Status == TaskCompleted || p.Status == TaskCancelled:
		return redstate.Errorf(redstate.ECONFLICT, "task %s is %s; it cannot be retried", taskID, p.Status)
	}
	if err := r.st.Index.Set(ctx, t.spec.TenantID, taskID); err != nil {
		return err
	}
	r.mu.Lock()
	t.cancelled = false
	r.mu.Unlock()
	if !r.launch(t, fromCheckpoint) {
		return redstate.Errorf(redstate.ECONFLICT, "task %s is already running or the executor is stopping", taskID)
	}
	r.log.Info("executor: retrying task", "task", taskID, "tenant", t.spec.TenantID, "from_checkpoint", fromCheckpoint)
	return nil
}

// PlanTasks returns the task ids of a plan (from this instance, else its projection).
func (r *Runner) PlanTasks(ctx context.Context, planID string) ([]string, error) {
	r.mu.Lock()
	p := r.plans[planID]
	r.mu.Unlock()
	if p != nil && len(p.taskIDs) > 0 {
		return append([]string(nil), p.taskIDs...), nil
	}
	pp, err := r.st.Projections.GetPlan(ctx, planID)
	if err != nil {
		return nil, err
	}
	return pp.TaskIDs, nil
}

func elsewhere(s TaskStatus) string {
	if s == TaskRunning {
		return " (on another instance)"
	}
	return ""
}
