package executor

import (
	"context"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
)

// outcome is how a locked run ended.
type outcome struct {
	ev     TaskEventType // Completed, Paused, Failed, Cancelled, or "" (nothing to publish)
	reason string
}

// runLocked runs t while holding lease: it claims the run, executes the remaining stages,
// settles t's local state and publishes the outcome, then releases the lock.
func (r *Runner) runLocked(ctx context.Context, t *taskRun, lease Lease) {
	defer r.releaseLock(ctx, lease)
	fromCheckpoint, run := r.claimRun(ctx, t)
	if !run {
		return
	}
	out := r.execute(ctx, t, lease, fromCheckpoint)
	r.settle(t, out)
	if out.ev == "" {
		return
	}
	r.publishOutcome(ctx, t, lease, out)
}

// releaseLock releases the tenant lock of lease; a lock already lost (ECONFLICT) is not
// worth a warning.
func (r *Runner) releaseLock(ctx context.Context, lease Lease) {
	if err := r.st.Locks.Release(ctx, lease.Tenant, lease.Token); err != nil && !redstate.IsCode(err, redstate.ECONFLICT) {
		r.log.Warn("executor: releasing the tenant lock", "tenant", lease.Tenant, "error", err)
	}
}

// claimRun marks t running under the freshly acquired lock and returns whether to resume
// from the checkpoint. It returns run=false when there is nothing to run: another instance
// finished the task meanwhile (a concurrent retry; t takes that status), or a cancel or pause
// was requested while t waited (published here).
func (r *Runner) claimRun(ctx context.Context, t *taskRun) (fromCheckpoint, run bool) {
	if p, err := r.st.Projections.GetTask(ctx, t.spec.TaskID); err == nil && (p.Status == TaskCompleted || p.Status == TaskCancelled) {
		r.mu.Lock()
		t.state, t.status = stateIdle, p.Status
		r.mu.Unlock()
		return false, false
	}
	r.mu.Lock()
	if t.cancelled || t.pauseRequested {
		r.mu.Unlock()
		_, ev := r.checkWaiting(t)
		r.publishStopped(ctx, t, ev)
		return false, false
	}
	t.state = stateRunning
	fromCheckpoint = t.fromCheckpoint
	t.fromCheckpoint = true
	r.mu.Unlock()
	return fromCheckpoint, true
}

// settle returns t to idle after a run (a pause request is used up by a paused outcome).
func (r *Runner) settle(t *taskRun, out outcome) {
	r.mu.Lock()
	t.state, t.stageCancel = stateIdle, nil
	if out.ev == EventTaskPaused {
		t.pauseRequested = false
	}
	r.mu.Unlock()
}

// publishOutcome publishes how the run ended (its reason saved in the spec for a failure or a
// cancel, the checkpoint removed for a completed or cancelled task), reports it to the
// observer and the log, and refreshes the plan. When the store is unavailable, it keeps
// retrying the publication (see republishOutcome) so the task does not stay CREATED or
// RUNNING at a live runner.
func (r *Runner) publishOutcome(ctx context.Context, t *taskRun, lease Lease, out outcome) {
	// Publish only while still holding the lock: a holder that lost it (expired, taken over,
	// marked interrupted by another instance) must not overwrite the newer state.
	if err := r.st.Locks.Renew(ctx, lease.Tenant, lease.Token, r.opts.LockTTL); redstate.IsCode(err, redstate.ECONFLICT) {
		r.log.Warn("executor: tenant lock lost before the outcome was published; leaving the task to its new owner",
			"task", t.spec.TaskID, "tenant", t.spec.TenantID, "outcome", out.ev, "reason", out.reason)
		return
	}
	err := r.emitOutcome(ctx, t, out)
	if redstate.IsCode(err, redstate.EUNAVAILABLE) {
		r.log.Error("executor: publishing the task outcome; retrying until the store is back",
			"task", t.spec.TaskID, "event", out.ev, "error", err)
		if out, err = r.republishOutcome(ctx, t, lease, out); err != nil {
			r.log.Error("executor: gave up publishing the task outcome", "task", t.spec.TaskID, "event", out.ev, "error", err)
			return
		}
	}
	if err != nil {
		r.log.Error("executor: publishing the task outcome", "task", t.spec.TaskID, "event", out.ev, "error", err)
	}
	if out.ev == EventTaskCompleted || out.ev == EventTaskCancelled {
		r.finishCleanup(ctx, t, true)
	}
	if r.opts.Observer != nil {
		r.opts.Observer.TaskFinished(out.ev.Status())
	}
	lvl := slog.LevelInfo
	if out.ev == EventTaskFailed {
		lvl = slog.LevelWarn
	}
	r.log.Log(ctx, lvl, "executor: task "+string(out.ev.Status()), "task", t.spec.TaskID, "tenant", t.spec.TenantID, "plan", t.spec.PlanID, "reason", out.reason)
	r.refreshPlan(ctx, t.spec.PlanID)
}

// emitOutcome saves the reason of a failed or cancelled run in the spec and publishes the
// outcome's event.
func (r *Runner) emitOutcome(ctx context.Context, t *taskRun, out outcome) error {
	if out.ev == EventTaskFailed || out.ev == EventTaskCancelled {
		r.saveReason(ctx, t, out.reason)
	}
	return r.emitTask(ctx, t, out.ev, out.reason)
}

// maxRepublishWait caps the growing wait between two attempts of republishOutcome.
const maxRepublishWait = 5 * time.Second

// republishOutcome retries publishing out after a failed attempt, waiting LockRetryInterval
// (doubling up to maxRepublishWait) between attempts. Meanwhile t's local state is
// stateWaiting, so that nothing relaunches it here and the orphan scan skips it; a cancel
// requested meanwhile turns an outcome other than COMPLETED into CANCELLED. Each attempt
// publishes only under the tenant lock: lease while it can be renewed, else a lock re-acquired
// for t after checking that t's projection still shows the status this runner last published
// (nobody moved the task on). It returns the published outcome, or an error when it gives up: the task was
// relaunched here already, another owner has it (ECONFLICT), the store refused the event for
// another reason than unavailability, or the runner is stopping.
func (r *Runner) republishOutcome(ctx context.Context, t *taskRun, lease Lease, out outcome) (outcome, error) {
	r.mu.Lock()
	if t.state != stateIdle {
		r.mu.Unlock()
		return out, redstate.Errorf(redstate.ECONFLICT, "task %s was relaunched on this instance", t.spec.TaskID)
	}
	t.state = stateWaiting
	r.mu.Unlock()
	defer r.setState(t, stateIdle)
	wait := r.opts.LockRetryInterval
	for {
		select {
		case <-time.After(wait):
		case <-r.stopCh:
			return out, redstate.Errorf(redstate.EUNAVAILABLE, "the runner is stopping")
		}
		wait = min(2*wait, maxRepublishWait)
		r.mu.Lock()
		if t.cancelled && out.ev != EventTaskCompleted {
			out = outcome{EventTaskCancelled, "cancelled"}
		}
		r.mu.Unlock()
		done, err := r.republishOnce(ctx, t, lease, out)
		if done {
			return out, err
		}
		r.log.Warn("executor: publishing the task outcome failed; retrying", "task", t.spec.TaskID, "event", out.ev, "error", err)
	}
}

// republishOnce is one attempt of republishOutcome: done=true when out was published (err
// nil), another owner has t (err ECONFLICT) or the store refused the event (not EUNAVAILABLE);
// done=false with the error to retry after.
func (r *Runner) republishOnce(ctx context.Context, t *taskRun, lease Lease, out outcome) (done bool, err error) {
	err = r.st.Locks.Renew(ctx, lease.Tenant, lease.Token, r.opts.LockTTL)
	if err == nil {
		return republishDone(r.emitOutcome(ctx, t, out))
	}
	if !redstate.IsCode(err, redstate.ECONFLICT) {
		return false, err
	}
	// The lease expired during the outage: take the lock again for t.
	again, ok, err := r.st.Locks.TryAcquire(ctx, lease.Tenant, t.spec.TaskID, r.opts.LockTTL)
	if err != nil {
		return false, err
	}
	if !ok {
		holder, err := r.st.Locks.Holder(ctx, lease.Tenant)
		if err == nil && tokenOf(holder, t.spec.TaskID) {
			return true, redstate.Errorf(redstate.ECONFLICT, "task %s is run by another owner", t.spec.TaskID)
		}
		return false, redstate.Errorf(redstate.EUNAVAILABLE, "tenant %s is locked by another task", lease.Tenant)
	}
	defer r.releaseLock(ctx, again)
	p, err := r.st.Projections.GetTask(ctx, t.spec.TaskID)
	if err != nil {
		return redstate.IsCode(err, redstate.ENOTFOUND), err
	}
	r.mu.Lock()
	last := t.status
	r.mu.Unlock()
	if p.Status != last {
		return true, redstate.Errorf(redstate.ECONFLICT, "task %s moved on to %s meanwhile", t.spec.TaskID, p.Status)
	}
	return republishDone(r.emitOutcome(ctx, t, out))
}

// republishDone maps the error of a publication attempt to republishOnce's result.
func republishDone(err error) (bool, error) {
	return !redstate.IsCode(err, redstate.EUNAVAILABLE), err
}

// finishCleanup removes a finished task's checkpoint (completed or cancelled tasks).
func (r *Runner) finishCleanup(ctx context.Context, t *taskRun, removeCheckpoint bool) {
	if removeCheckpoint {
		if err := r.st.Checkpoints.Remove(ctx, t.spec.TaskID); err != nil {
			r.log.Warn("executor: removing the checkpoint", "task", t.spec.TaskID, "error", err)
		}
	}
}

// saveReason stores the reason of a failed or cancelled run in the task's spec.
func (r *Runner) saveReason(ctx context.Context, t *taskRun, reason string) {
	r.mu.Lock()
	t.spec.Reason = reason
	spec := t.spec
	r.mu.Unlock()
	if err := r.st.Registry.PutSpec(ctx, spec); err != nil {
		r.log.Warn("executor: saving the task spec", "task", spec.TaskID, "error", err)
	}
}
