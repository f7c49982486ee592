package executor

import (
	"context"
	"time"

	"github.com/redstate/redstate"
)

// TaskStatusInfo is the answer of the seed's queryTaskStatusByTenant (section 7): the task
// projection plus progress, the failure reason and whether a checkpoint exists.
type TaskStatusInfo struct {
	TaskID                  string     `json:"taskId"`
	TenantID                string     `json:"tenantId"`
	PlanID                  string     `json:"planId"`
	Status                  TaskStatus `json:"status"`
	PauseRequested          bool       `json:"pauseRequested"`
	StageNames              []string   `json:"stageNames"`
	LastCompletedStageIndex int        `json:"lastCompletedStageIndex"`
	// CompletedStages is lastCompletedStageIndex+1; Progress is CompletedStages/len(stageNames).
	CompletedStages int     `json:"completedStages"`
	Progress        float64 `json:"progress"`
	// CurrentStage is the next stage to run ("" when all are done).
	CurrentStage string `json:"currentStage,omitempty"`
	// Reason is why the task failed or was cancelled ("interrupted: …" for an orphan).
	Reason        string `json:"reason,omitempty"`
	Handler       string `json:"handler,omitempty"`
	HasCheckpoint bool   `json:"hasCheckpoint"`
	// Checkpoint is CheckpointPresent, CheckpointNone or CheckpointUnreadable (a stored value
	// that does not decode: the task is still shown, with CheckpointError saying why).
	Checkpoint      string `json:"checkpoint"`
	CheckpointError string `json:"checkpointError,omitempty"`
	// LockHeld reports whether the tenant's lock is held now (by any instance).
	LockHeld bool `json:"lockHeld"`
	// Actions are the controls the task's status allows (TaskStatus.Actions): pause, resume,
	// cancel, retry.
	Actions   []string  `json:"actions"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// PlanStatusInfo is the answer of queryPlanStatus: the plan projection and its tasks.
type PlanStatusInfo struct {
	PlanProjection
	Tasks []TaskStatusInfo `json:"tasks"`
}

// TaskStatusByTenant returns the status of the tenant's current task (tenant index).
// Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
func (r *Runner) TaskStatusByTenant(ctx context.Context, tenantID string) (TaskStatusInfo, error) {
	id, err := r.st.Index.Get(ctx, tenantID)
	if err != nil {
		return TaskStatusInfo{}, err
	}
	return r.TaskStatus(ctx, id)
}

// TaskIDByTenant returns the tenant's current task id. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
func (r *Runner) TaskIDByTenant(ctx context.Context, tenantID string) (string, error) {
	return r.st.Index.Get(ctx, tenantID)
}

// TaskStatus returns a task's status. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
func (r *Runner) TaskStatus(ctx context.Context, taskID string) (TaskStatusInfo, error) {
	p, err := r.st.Projections.GetTask(ctx, taskID)
	if err != nil {
		return TaskStatusInfo{}, err
	}
	info := TaskStatusInfo{
		TaskID: p.TaskID, TenantID: p.TenantID, PlanID: p.PlanID, Status: p.Status, PauseRequested: p.PauseRequested,
		StageNames: p.StageNames, LastCompletedStageIndex: p.LastCompletedStageIndex,
		CompletedStages: p.LastCompletedStageIndex + 1, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		Actions: p.Status.Actions(p.PauseRequested),
	}
	if info.StageNames == nil {
		info.StageNames = []string{}
	}
	if n := len(p.StageNames); n > 0 {
		info.Progress = float64(info.CompletedStages) / float64(n)
		if info.CompletedStages < n {
			info.CurrentStage = p.StageNames[info.CompletedStages]
		}
	}
	if spec, err := r.st.Registry.GetSpec(ctx, taskID); err == nil {
		info.Handler = spec.Handler
		if p.Status == TaskFailed || p.Status == TaskCancelled {
			info.Reason = spec.Reason
		}
	}
	state, reason, err := r.checkpointState(ctx, taskID)
	if err != nil {
		return TaskStatusInfo{}, err
	}
	info.Checkpoint, info.CheckpointError, info.HasCheckpoint = state, reason, state == CheckpointPresent
	if p.TenantID != "" {
		held, err := r.st.Locks.Exists(ctx, p.TenantID)
		if err != nil {
			return TaskStatusInfo{}, err
		}
		info.LockHeld = held
	}
	return info, nil
}

// PlanStatus returns a plan's status with its tasks. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
func (r *Runner) PlanStatus(ctx context.Context, planID string) (PlanStatusInfo, error) {
	p, err := r.st.Projections.GetPlan(ctx, planID)
	if err != nil {
		return PlanStatusInfo{}, err
	}
	out := PlanStatusInfo{PlanProjection: p, Tasks: []TaskStatusInfo{}}
	if out.TaskIDs == nil {
		out.TaskIDs = []string{}
	}
	for _, id := range p.TaskIDs {
		ti, err := r.TaskStatus(ctx, id)
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			continue
		}
		if err != nil {
			return PlanStatusInfo{}, err
		}
		out.Tasks = append(out.Tasks, ti)
	}
	return out, nil
}

// Checkpoint states of TaskStatusInfo.Checkpoint.
const (
	CheckpointPresent    = "present"
	CheckpointNone       = "none"
	CheckpointUnreadable = "unreadable"
)

// checkpointState reads a task's checkpoint: present, none, or unreadable with the reason (a
// stored value that does not decode must not hide the task from operators).
// Errors: EUNAVAILABLE and other store failures.
func (r *Runner) checkpointState(ctx context.Context, taskID string) (state, reason string, err error) {
	switch _, err := r.st.Checkpoints.Get(ctx, taskID); {
	case err == nil:
		return CheckpointPresent, "", nil
	case redstate.IsCode(err, redstate.ENOTFOUND):
		return CheckpointNone, "", nil
	case redstate.IsCode(err, redstate.EINTERNAL):
		return CheckpointUnreadable, err.Error(), nil
	default:
		return "", "", err
	}
}

// HasCheckpoint reports whether the tenant's current task has a readable checkpoint (seed
// 7.1). Errors: EINVALID, ENOTFOUND (no task for the tenant), EUNAVAILABLE.
func (r *Runner) HasCheckpoint(ctx context.Context, tenantID string) (string, bool, error) {
	id, state, _, err := r.TenantCheckpoint(ctx, tenantID)
	return id, state == CheckpointPresent, err
}

// TenantCheckpoint returns the tenant's current task and the state of its checkpoint
// (CheckpointPresent, CheckpointNone, or CheckpointUnreadable with the reason).
// Errors: EINVALID, ENOTFOUND (no task for the tenant), EUNAVAILABLE.
func (r *Runner) TenantCheckpoint(ctx context.Context, tenantID string) (taskID, state, reason string, err error) {
	id, err := r.st.Index.Get(ctx, tenantID)
	if err != nil {
		return "", "", "", err
	}
	state, reason, err = r.checkpointState(ctx, id)
	return id, state, reason, err
}

// RetryByTenant retries the tenant's current task (the query API's retryTaskByTenant).
func (r *Runner) RetryByTenant(ctx context.Context, tenantID string, fromCheckpoint bool) (string, error) {
	id, err := r.st.Index.Get(ctx, tenantID)
	if err != nil {
		return "", err
	}
	return id, r.Retry(ctx, id, fromCheckpoint)
}

// InspectState takes a keyspace snapshot, counts leaked locks (held for a task whose
// projection is terminal) and reports both to the Observer. Errors: from the Inspector.
func (r *Runner) InspectState(ctx context.Context) (StateStats, error) {
	if r.st.Inspector == nil {
		return StateStats{}, redstate.Errorf(redstate.EINVALID, "executor: no Inspector configured")
	}
	st, err := r.st.Inspector.Inspect(ctx)
	if err != nil {
		r.log.Warn("executor: inspecting the keyspace", "error", err)
		return st, err
	}
	leaked := 0
	for _, owner := range st.Locks {
		if ValidateID("taskId", owner) != nil {
			continue
		}
		if p, err := r.st.Projections.GetTask(ctx, owner); err == nil && p.Status.Terminal() {
			leaked++
		}
	}
	if r.opts.Observer != nil {
		r.opts.Observer.State(st, leaked)
	}
	return st, nil
}
