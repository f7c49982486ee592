package executor

import (
	"context"
	"time"

	"github.com/redstate/redstate"
)

// routeControl sends action to the instance that runs t when that is another, live instance
// (t is idle here and its projection is RUNNING): the owner applies it within
// controlPollInterval and the caller sees the effect in the projection. routed is false when
// the task is not running elsewhere (the caller acts locally). Errors: ECONFLICT (RUNNING on an
// instance that is dead or unknown: the orphan scan marks it interrupted first), EUNAVAILABLE.
func (r *Runner) routeControl(ctx context.Context, t *taskRun, action string) (routed bool, err error) {
	r.mu.Lock()
	local := t.state != stateIdle
	r.mu.Unlock()
	if local {
		return false, nil
	}
	p, err := r.st.Projections.GetTask(ctx, t.spec.TaskID)
	if err != nil {
		return false, nil // unreadable: decided locally on what this instance knows
	}
	// The projection is authoritative for a task idle here (another instance may have run it).
	r.mu.Lock()
	if t.state == stateIdle {
		t.status, t.lastCompleted = p.Status, p.LastCompletedStageIndex
	}
	r.mu.Unlock()
	if p.Status != TaskRunning {
		return false, nil
	}
	owner, err := r.st.Registry.Owner(ctx, t.spec.TaskID)
	if err != nil {
		return false, err
	}
	if owner == "" || owner == r.opts.InstanceID {
		return false, nil
	}
	alive, err := r.st.Registry.Alive(ctx, owner)
	if err != nil {
		return false, err
	}
	if !alive {
		return false, redstate.Errorf(redstate.ECONFLICT,
			"task %s is RUNNING on instance %s, which stopped its liveness heartbeat; the orphan scan marks it FAILED (interrupted) shortly, then retry or cancel it", t.spec.TaskID, owner)
	}
	if err := r.st.Registry.SendControl(ctx, owner, ControlCommand{TaskID: t.spec.TaskID, Action: action, SentAt: time.Now().UTC()}); err != nil {
		return false, err
	}
	r.log.Info("executor: control routed to the instance running the task", "task", t.spec.TaskID, "action", action, "instance", owner)
	return true, nil
}

// controlPollInterval is how often an instance applies the control commands sent to it.
const controlPollInterval = 250 * time.Millisecond

// applyControls applies the commands other instances routed to this one (routeControl).
func (r *Runner) applyControls(ctx context.Context) {
	cmds, err := r.st.Registry.TakeControls(ctx, r.opts.InstanceID)
	if err != nil {
		return
	}
	for _, c := range cmds {
		var err error
		switch c.Action {
		case ControlPause:
			err = r.Pause(ctx, c.TaskID)
		case ControlResume:
			err = r.Resume(ctx, c.TaskID)
		case ControlCancel:
			err = r.Cancel(ctx, c.TaskID)
		case ControlRetry, ControlRetryFromStart:
			err = r.Retry(ctx, c.TaskID, c.Action == ControlRetry)
		}
		if err != nil {
			r.log.Warn("executor: a routed control command could not be applied", "task", c.TaskID, "action", c.Action, "error", err)
		}
	}
}

// Pause asks a task to pause. A waiting or created task pauses at once; a running one at its
// next stage boundary (its projection shows pauseRequested until then). Errors: ENOTFOUND,
// ECONFLICT (already paused or finished, or running on another instance), EUNAVAILABLE.
func (r *Runner) Pause(ctx context.Context, taskID string) error {
	t, err := r.loadTask(ctx, taskID)
	if err != nil {
		return err
	}
	if routed, err := r.routeControl(ctx, t, ControlPause); routed || err != nil {
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
	if routed, err := r.routeControl(ctx, t, ControlResume); routed || err != nil {
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
	if routed, err := r.routeControl(ctx, t, ControlCancel); routed || err != nil {
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
