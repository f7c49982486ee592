package executor

import (
	"context"
	"time"

	"github.com/redstate/redstate"
)

// OrphanScanOwner is the lock owner the orphan scan uses while it marks a task (a holder in
// StateStats.Locks that is not a task).
const OrphanScanOwner = "orphan-scan"

// ScanOrphans checks every task of the running set (Keys.Running: no SCAN) that this
// instance does not run: a task whose projection is no longer RUNNING leaves the set; a
// RUNNING task whose owner instance is dead (its liveness key, renewed every
// LivenessInterval, has expired) or whose tenant lock has expired is marked FAILED with reason
// "interrupted: …" so that it can be retried. A dead owner's lock is released first, checked
// against its token, so a lock re-taken meanwhile is never touched. To mark a task, the scan
// takes the tenant lock itself (a new fence) and re-reads the projection, so a task that
// finished or paused meanwhile, or whose tenant is locked again, is never marked. A task whose
// owner is alive is never marked, however long its stage runs. It returns the marked ids.
func (r *Runner) ScanOrphans(ctx context.Context) ([]string, error) {
	ids, err := r.st.Registry.RunningTasks(ctx)
	if err != nil {
		return nil, err
	}
	var marked []string
	for _, id := range ids {
		r.mu.Lock()
		t := r.tasks[id]
		local := t != nil && t.state != stateIdle
		r.mu.Unlock()
		if local {
			continue
		}
		p, err := r.st.Projections.GetTask(ctx, id)
		if redstate.IsCode(err, redstate.ENOTFOUND) || err == nil && p.Status != TaskRunning {
			_ = r.st.Registry.ClearRunning(ctx, id)
			continue
		}
		if err != nil || p.TenantID == "" {
			continue
		}
		reason := ReasonInterrupted + ": the instance running it stopped renewing the tenant lock (lock expired)"
		held, err := r.st.Locks.Exists(ctx, p.TenantID)
		if err != nil {
			continue
		}
		if held {
			owner, dead := r.deadOwner(ctx, id, p.TenantID)
			if !dead {
				continue
			}
			reason = ReasonInterrupted + ": the instance running it (" + owner + ") stopped its liveness heartbeat"
		}
		lease, ok, err := r.st.Locks.TryAcquire(ctx, p.TenantID, OrphanScanOwner, 30*time.Second)
		if err != nil || !ok {
			continue
		}
		if r.markOrphan(ctx, id, reason) {
			marked = append(marked, id)
		}
		_ = r.st.Locks.Release(ctx, p.TenantID, lease.Token)
	}
	return marked, nil
}

// deadOwner reports whether task id's owner instance is dead, and if so releases the tenant
// lock the task still holds (token-checked: only a lock held for this very task is released).
// Unknown owners (a task started before owners were recorded) are left to the lock's TTL.
func (r *Runner) deadOwner(ctx context.Context, id, tenant string) (owner string, dead bool) {
	owner, err := r.st.Registry.Owner(ctx, id)
	if err != nil || owner == "" || owner == r.opts.InstanceID {
		return owner, false
	}
	if alive, err := r.st.Registry.Alive(ctx, owner); err != nil || alive {
		return owner, false
	}
	token, err := r.st.Locks.Holder(ctx, tenant)
	if err != nil || !tokenOf(token, id) {
		return owner, false // another task (or the scan of another instance) holds the tenant now
	}
	if err := r.st.Locks.Release(ctx, tenant, token); err != nil {
		return owner, false
	}
	r.log.Warn("executor: took over the tenant lock of a task whose instance is dead", "task", id, "tenant", tenant, "instance", owner)
	return owner, true
}

// markOrphan marks id FAILED with reason if its projection still shows RUNNING; the caller
// holds the tenant lock.
func (r *Runner) markOrphan(ctx context.Context, id, reason string) bool {
	p, err := r.st.Projections.GetTask(ctx, id)
	if err != nil || p.Status != TaskRunning {
		return false
	}
	t, err := r.loadTask(ctx, id)
	if err != nil {
		r.log.Warn("executor: orphan without a task spec", "task", id, "error", err)
		return false
	}
	r.mu.Lock()
	if t.state != stateIdle {
		r.mu.Unlock()
		return false
	}
	t.lastCompleted = p.LastCompletedStageIndex
	r.mu.Unlock()
	r.saveReason(ctx, t, reason)
	if err := r.emitTask(ctx, t, EventTaskFailed, reason); err != nil {
		r.log.Warn("executor: marking an orphan", "task", id, "error", err)
		return false
	}
	r.log.Warn("executor: task interrupted: it was RUNNING but its instance is gone; marked FAILED (retry it from its checkpoint)",
		"task", id, "reason", reason, "tenant", p.TenantID, "plan", p.PlanID, "last_completed_stage_index", p.LastCompletedStageIndex)
	if r.opts.Observer != nil {
		r.opts.Observer.OrphanMarked()
	}
	r.refreshPlan(ctx, p.PlanID)
	return true
}

// loadTask returns the local record of a task, loading it from its spec and projection when
// this instance does not know it (after a restart, or for a task of another instance).
// Errors: ENOTFOUND, EUNAVAILABLE.
func (r *Runner) loadTask(ctx context.Context, id string) (*taskRun, error) {
	r.mu.Lock()
	t := r.tasks[id]
	r.mu.Unlock()
	if t != nil {
		return t, nil
	}
	spec, err := r.st.Registry.GetSpec(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := r.st.Projections.GetTask(ctx, id)
	if err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) {
		return nil, err
	}
	last := -1
	status := TaskCreated
	if err == nil {
		last, status = p.LastCompletedStageIndex, p.Status
	}
	maxConc := 1
	var taskIDs []string
	if spec.PlanID != "" {
		if pp, err := r.st.Projections.GetPlan(ctx, spec.PlanID); err == nil {
			maxConc, taskIDs = max(pp.MaxConcurrency, 1), pp.TaskIDs
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tasks[id]; t != nil {
		return t, nil
	}
	plan := r.plans[spec.PlanID]
	if plan == nil {
		plan = &planRun{id: spec.PlanID, sem: make(chan struct{}, maxConc), maxConc: maxConc, taskIDs: taskIDs}
		if spec.PlanID != "" {
			r.plans[spec.PlanID] = plan
		}
	}
	t = &taskRun{plan: plan, spec: spec, status: status, lastCompleted: last, wake: make(chan struct{}, 1)}
	r.tasks[id] = t
	return t, nil
}
