package executor

import (
	"context"
	"slices"
	"time"

	"github.com/redstate/redstate"
)

// CreatePlan validates def, stores its task specs, publishes PlanReady and TaskCreated (which
// sets the tenant index) and, when start is true, starts it (StartPlan). It returns the plan
// with generated ids filled in. The plan and task ids are claimed in the store first
// (TaskRegistry.ClaimIDs), so an id used before, on any instance and across restarts, is
// refused. Errors: EINVALID (bad definition or unknown handler), ECONFLICT (a plan or task id
// is in use), EUNAVAILABLE.
func (r *Runner) CreatePlan(ctx context.Context, def PlanDef, start bool) (PlanDef, error) {
	def, err := validatePlan(def, r.opts.DefaultRetry)
	if err != nil {
		return def, err
	}
	for _, t := range def.Tasks {
		if !r.HasHandler(t.Handler) {
			return def, redstate.Errorf(redstate.EINVALID, "task %s: no stage handler %q is registered (configure executor.handlers)", t.TaskID, t.Handler)
		}
	}
	p := &planRun{id: def.PlanID, sem: make(chan struct{}, def.MaxConcurrency), maxConc: def.MaxConcurrency}
	now := time.Now()
	runs := make([]*taskRun, 0, len(def.Tasks))
	for _, t := range def.Tasks {
		p.taskIDs = append(p.taskIDs, t.TaskID)
		runs = append(runs, &taskRun{plan: p, wake: make(chan struct{}, 1), lastCompleted: -1, status: TaskCreated, spec: TaskSpec{
			TaskID: t.TaskID, TenantID: t.TenantID, PlanID: def.PlanID, Stages: slices.Clone(t.Stages),
			Handler: t.Handler, ContextData: t.ContextData, Retry: t.Retry, CreatedAt: now.UTC(),
		}})
	}
	r.mu.Lock()
	if _, dup := r.plans[def.PlanID]; dup {
		r.mu.Unlock()
		return def, redstate.Errorf(redstate.ECONFLICT, "plan %s exists", def.PlanID)
	}
	for _, t := range runs {
		if _, dup := r.tasks[t.spec.TaskID]; dup {
			r.mu.Unlock()
			return def, redstate.Errorf(redstate.ECONFLICT, "task %s exists", t.spec.TaskID)
		}
	}
	r.mu.Unlock()
	if err := r.st.Registry.ClaimIDs(ctx, def.PlanID, p.taskIDs); err != nil {
		return def, err
	}
	r.mu.Lock()
	r.plans[def.PlanID] = p
	for _, t := range runs {
		r.tasks[t.spec.TaskID] = t
	}
	r.mu.Unlock()

	for _, t := range runs {
		if err := r.st.Registry.PutSpec(ctx, t.spec); err != nil {
			return def, err
		}
	}
	if err := r.emitPlan(ctx, PlanEvent{Type: EventPlanReady, PlanID: def.PlanID, TaskIDs: p.taskIDs, MaxConcurrency: def.MaxConcurrency}); err != nil {
		return def, err
	}
	for _, t := range runs {
		if err := r.emitTask(ctx, t, EventTaskCreated, ""); err != nil {
			return def, err
		}
	}
	if start {
		if err := r.StartPlan(ctx, def.PlanID); err != nil {
			return def, err
		}
	}
	return def, nil
}

// StartPlan starts every created task of a plan of this instance. Errors: ENOTFOUND.
func (r *Runner) StartPlan(ctx context.Context, planID string) error {
	r.mu.Lock()
	p, ok := r.plans[planID]
	if !ok {
		r.mu.Unlock()
		return redstate.Errorf(redstate.ENOTFOUND, "plan %s is not known to this instance", planID)
	}
	var start []*taskRun
	for _, id := range p.taskIDs {
		if t := r.tasks[id]; t != nil && t.state == stateIdle && t.status == TaskCreated && !t.cancelled {
			start = append(start, t)
		}
	}
	r.mu.Unlock()
	if err := r.emitPlan(ctx, PlanEvent{Type: EventPlanStarted, PlanID: planID}); err != nil {
		return err
	}
	for _, t := range start {
		r.launch(t, true)
	}
	return nil
}
