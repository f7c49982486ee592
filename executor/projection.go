package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/redstate/redstate"
)

// TaskStatus is a task's lifecycle state as the projection shows it.
type TaskStatus string

// Task statuses.
const (
	TaskCreated   TaskStatus = "CREATED"
	TaskRunning   TaskStatus = "RUNNING"
	TaskPaused    TaskStatus = "PAUSED"
	TaskCompleted TaskStatus = "COMPLETED"
	TaskFailed    TaskStatus = "FAILED"
	// TaskCancelled is the runtime's addition: a task cancelled by a user (final, no retry).
	TaskCancelled TaskStatus = "CANCELLED"
)

// Terminal reports whether s is COMPLETED, FAILED or CANCELLED.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// PlanStatus is a plan's lifecycle state as the projection shows it.
type PlanStatus string

// Plan statuses.
const (
	PlanReady     PlanStatus = "READY"
	PlanRunning   PlanStatus = "RUNNING"
	PlanPaused    PlanStatus = "PAUSED"
	PlanCompleted PlanStatus = "COMPLETED"
	PlanFailed    PlanStatus = "FAILED"
)

// Terminal reports whether s is COMPLETED or FAILED.
func (s PlanStatus) Terminal() bool { return s == PlanCompleted || s == PlanFailed }

// TaskEventType names the task events the projection listens to.
type TaskEventType string

// Task event types.
const (
	EventTaskCreated        TaskEventType = "TaskCreated"
	EventTaskStarted        TaskEventType = "TaskStarted"
	EventTaskPaused         TaskEventType = "TaskPaused"
	EventTaskCompleted      TaskEventType = "TaskCompleted"
	EventTaskFailed         TaskEventType = "TaskFailed"
	EventTaskStageCompleted TaskEventType = "TaskStageCompleted"
	// EventTaskCancelled is the event of a cancelled task (the runtime's addition to the
	// documented task events).
	EventTaskCancelled TaskEventType = "TaskCancelled"
)

// Status returns the status an event of type t sets, or "" for StageCompleted (which sets
// none) and unknown types.
func (t TaskEventType) Status() TaskStatus {
	switch t {
	case EventTaskCreated:
		return TaskCreated
	case EventTaskStarted:
		return TaskRunning
	case EventTaskPaused:
		return TaskPaused
	case EventTaskCompleted:
		return TaskCompleted
	case EventTaskFailed:
		return TaskFailed
	case EventTaskCancelled:
		return TaskCancelled
	}
	return ""
}

// PlanEventType names the plan events the projection listens to.
type PlanEventType string

// Plan event types.
const (
	EventPlanReady     PlanEventType = "PlanReady"
	EventPlanStarted   PlanEventType = "PlanStarted"
	EventPlanPaused    PlanEventType = "PlanPaused"
	EventPlanCompleted PlanEventType = "PlanCompleted"
	EventPlanFailed    PlanEventType = "PlanFailed"
)

// Status returns the status an event of type t sets, "" for unknown types.
func (t PlanEventType) Status() PlanStatus {
	switch t {
	case EventPlanReady:
		return PlanReady
	case EventPlanStarted:
		return PlanRunning
	case EventPlanPaused:
		return PlanPaused
	case EventPlanCompleted:
		return PlanCompleted
	case EventPlanFailed:
		return PlanFailed
	}
	return ""
}

// TaskEvent is one task event as the projection consumes it.
type TaskEvent struct {
	// Type is the event type.
	Type TaskEventType
	// TaskID identifies the task (required).
	TaskID string
	// TenantID and PlanID are written when non-empty (TaskCreated carries them).
	TenantID, PlanID string
	// StageNames are written by TaskCreated (nil elsewhere).
	StageNames []string
	// StageIndex is the completed stage of a StageCompleted event.
	StageIndex int
	// PauseRequested is written together with the status of a status event.
	PauseRequested bool
	// Seq orders the task's status events: the producer numbers them (for example the
	// aggregate's version). 0 means unnumbered; At then decides.
	Seq int64
	// At is when the event happened (required; the store uses it for createdAt/updatedAt).
	At time.Time
}

// PlanEvent is one plan event as the projection consumes it.
type PlanEvent struct {
	// Type is the event type.
	Type PlanEventType
	// PlanID identifies the plan (required).
	PlanID string
	// TaskIDs are written when non-nil (PlanReady carries them).
	TaskIDs []string
	// MaxConcurrency is written when positive.
	MaxConcurrency int
	// Progress (0..1) is written together with the status.
	Progress float64
	// Seq orders the plan's events like TaskEvent.Seq.
	Seq int64
	// At is when the event happened (required).
	At time.Time
}

// TaskProjection is the task read model (Redis Hash "N:task:<taskId>", docs/executor.md, Keys).
type TaskProjection struct {
	TaskID                  string     `json:"taskId"`
	TenantID                string     `json:"tenantId"`
	PlanID                  string     `json:"planId"`
	Status                  TaskStatus `json:"status"`
	PauseRequested          bool       `json:"pauseRequested"`
	StageNames              []string   `json:"stageNames"`
	LastCompletedStageIndex int        `json:"lastCompletedStageIndex"`
	// CreatedAt is zero until the TaskCreated event has been applied.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// PlanProjection is the plan read model (Redis Hash "N:plan:<planId>", docs/executor.md, Keys).
type PlanProjection struct {
	PlanID         string     `json:"planId"`
	Status         PlanStatus `json:"status"`
	TaskIDs        []string   `json:"taskIds"`
	Progress       float64    `json:"progress"`
	MaxConcurrency int        `json:"maxConcurrency"`
	// CreatedAt is zero until the PlanReady event has been applied.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ProjectionStore keeps the task and plan read models up to date from events.
//
// Applying events is idempotent and order-insensitive, so listeners may redeliver and reorder:
//
//   - status (and pauseRequested, or progress for plans) is taken from the event with the
//     greatest order key (Seq, terminal, At) (see EventOrder); an event whose key is not
//     greater than the stored one is ignored for these fields. Because "terminal" ranks
//     above the time, a terminal status (COMPLETED, FAILED) is replaced only by an event with
//     a strictly greater Seq, never on time alone: a stale non-terminal event cannot revive a
//     finished task even across clock skew, and a retry must carry a greater Seq. The key is
//     a total order, so the result does not depend on delivery order;
//   - lastCompletedStageIndex is the maximum over StageCompleted events: a late one never
//     lowers it (-1 before any);
//   - updatedAt is the latest At seen; createdAt is the At of TaskCreated / PlanReady;
//   - identity fields (tenantId, planId, stageNames, taskIds, maxConcurrency) are written when
//     an event carries them.
//
// Every write refreshes the hash's TTL (DefaultProjectionTTL). Besides the seed's fields the
// hash holds "eventOrder", the order key of the event that set the status.
type ProjectionStore interface {
	// ApplyTaskEvent folds ev into the task's projection.
	// Errors: EINVALID (bad id or type, zero At, negative Seq), EUNAVAILABLE.
	ApplyTaskEvent(ctx context.Context, ev TaskEvent) error
	// ApplyPlanEvent folds ev into the plan's projection.
	// Errors: EINVALID, EUNAVAILABLE.
	ApplyPlanEvent(ctx context.Context, ev PlanEvent) error
	// GetTask returns the task's projection. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
	GetTask(ctx context.Context, taskID string) (TaskProjection, error)
	// GetPlan returns the plan's projection. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
	GetPlan(ctx context.Context, planID string) (PlanProjection, error)
}

// ValidateTaskEvent returns EINVALID unless ev can be applied.
func ValidateTaskEvent(ev TaskEvent) error {
	if err := ValidateID("taskId", ev.TaskID); err != nil {
		return err
	}
	if ev.Type.Status() == "" && ev.Type != EventTaskStageCompleted {
		return redstate.Errorf(redstate.EINVALID, "unknown task event type %q", ev.Type)
	}
	if ev.TenantID != "" {
		if err := ValidateID("tenantId", ev.TenantID); err != nil {
			return err
		}
	}
	if ev.PlanID != "" {
		if err := ValidateID("planId", ev.PlanID); err != nil {
			return err
		}
	}
	if ev.Type == EventTaskStageCompleted && ev.StageIndex < 0 {
		return redstate.Errorf(redstate.EINVALID, "stage index must be >= 0, got %d", ev.StageIndex)
	}
	return validateOrder(ev.Seq, ev.At)
}

// ValidatePlanEvent returns EINVALID unless ev can be applied.
func ValidatePlanEvent(ev PlanEvent) error {
	if err := ValidateID("planId", ev.PlanID); err != nil {
		return err
	}
	if ev.Type.Status() == "" {
		return redstate.Errorf(redstate.EINVALID, "unknown plan event type %q", ev.Type)
	}
	for _, id := range ev.TaskIDs {
		if err := ValidateID("taskId", id); err != nil {
			return err
		}
	}
	if ev.Progress < 0 || ev.Progress > 1 || ev.MaxConcurrency < 0 {
		return redstate.Errorf(redstate.EINVALID, "progress must be in 0..1 and maxConcurrency >= 0")
	}
	return validateOrder(ev.Seq, ev.At)
}

func validateOrder(seq int64, at time.Time) error {
	if seq < 0 {
		return redstate.Errorf(redstate.EINVALID, "event seq must be >= 0, got %d", seq)
	}
	if at.IsZero() || at.UnixNano() < 0 {
		return redstate.Errorf(redstate.EINVALID, "event time is required (and after 1970)")
	}
	return nil
}

// EventOrder returns the order key of a status event: fixed-width decimal Seq, '.', 1 if the
// status is terminal else 0, '.', fixed-width decimal UnixNano of At. Keys compare correctly
// as byte strings (which the Lua scripts do).
func EventOrder(seq int64, terminal bool, at time.Time) string {
	t := 0
	if terminal {
		t = 1
	}
	return fmt.Sprintf("%019d.%d.%019d", seq, t, at.UnixNano())
}

// FormatTime formats t as the stored zone-less UTC date-time.
func FormatTime(t time.Time) string { return t.UTC().Format(LocalDateTimeLayout) }

// ParseTime parses a stored date-time ("" gives the zero time).
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(LocalDateTimeLayout, s)
}
