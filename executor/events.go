package executor

import (
	"context"
	"sync"
	"time"

	"github.com/redstate/redstate"
)

// EventTaskProgress is the TaskProgressEvent heartbeat (hooks only; in the projection it
// refreshes updatedAt).
const EventTaskProgress = "TaskProgress"

// Event is what OnEvent hooks receive: every task and plan event, plus TaskProgress
// heartbeats. Hooks run synchronously on the publishing goroutine (seed: synchronous event
// bus), after the projection was written; they must be quick.
type Event struct {
	// Type is a TaskEventType, a PlanEventType or EventTaskProgress.
	Type     string `json:"type"`
	TaskID   string `json:"taskId,omitempty"`
	TenantID string `json:"tenantId,omitempty"`
	PlanID   string `json:"planId,omitempty"`
	// Status is the task (or plan) status after the event.
	Status string `json:"status,omitempty"`
	// StageIndex and Stage name the completed stage of TaskStageCompleted.
	StageIndex int    `json:"stageIndex"`
	Stage      string `json:"stage,omitempty"`
	// LastCompletedStageIndex and StageCount give the progress of task events.
	LastCompletedStageIndex int `json:"lastCompletedStageIndex"`
	StageCount              int `json:"stageCount,omitempty"`
	// PauseRequested is the task's pause flag.
	PauseRequested bool `json:"pauseRequested,omitempty"`
	// Reason explains a failure or cancellation.
	Reason string `json:"reason,omitempty"`
	// Progress is the plan's completed fraction (plan events).
	Progress float64   `json:"progress,omitempty"`
	At       time.Time `json:"at"`
}

// OnEvent adds a hook that receives every event this runner publishes.
func (r *Runner) OnEvent(fn func(Event)) {
	r.hookMu.Lock()
	r.hooks = append(r.hooks, fn)
	r.hookMu.Unlock()
}

func (r *Runner) fire(ev Event) {
	r.hookMu.RLock()
	hooks := r.hooks
	r.hookMu.RUnlock()
	for _, h := range hooks {
		h(ev)
	}
}

// seqClock issues increasing event sequence numbers: max(last+1, now in µs). Using the clock
// keeps them increasing across processes and restarts (a retry on another instance publishes
// a greater Seq than the dead instance did, as the projection's ordering requires).
type seqClock struct {
	mu   sync.Mutex
	last int64
}

func (c *seqClock) next(floor int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last+1, floor+1, time.Now().UnixMicro())
	return c.last
}

// applyTask writes ev with retries while the store is unavailable and records the lag.
func (r *Runner) applyTask(ctx context.Context, ev TaskEvent) error {
	var err error
	for i := range 3 {
		if err = r.st.Projections.ApplyTaskEvent(ctx, ev); err == nil {
			if r.opts.Observer != nil {
				r.opts.Observer.ProjectionLag(time.Since(ev.At))
			}
			return nil
		}
		if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			return err
		}
		time.Sleep(time.Duration(100*(i+1)) * time.Millisecond)
	}
	return err
}

// emitTask publishes a status event of t (Created, Started, Paused, Completed, Failed,
// Cancelled): projection, tenant index (set on Created; deleted on Completed and Cancelled),
// running set, hooks.
func (r *Runner) emitTask(ctx context.Context, t *taskRun, typ TaskEventType, reason string) error {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	r.mu.Lock()
	spec := t.spec
	pause := t.pauseRequested && typ == EventTaskStarted
	last := t.lastCompleted
	r.mu.Unlock()
	t.seq = r.planSeq.next(t.seq)
	ev := TaskEvent{Type: typ, TaskID: spec.TaskID, TenantID: spec.TenantID, PlanID: spec.PlanID, PauseRequested: pause, Seq: t.seq, At: time.Now()}
	if typ == EventTaskCreated {
		ev.StageNames = spec.Stages
	}
	if err := r.applyTask(ctx, ev); err != nil {
		return err
	}
	r.mu.Lock()
	t.status = typ.Status()
	r.mu.Unlock()
	var err error
	switch typ {
	case EventTaskCreated:
		err = r.st.Index.Set(ctx, spec.TenantID, spec.TaskID)
	case EventTaskStarted:
		r.beat(ctx, false)
		if err = r.st.Registry.SetOwner(ctx, spec.TaskID, r.opts.InstanceID); err == nil {
			err = r.st.Registry.MarkRunning(ctx, spec.TaskID)
		}
	case EventTaskCompleted, EventTaskCancelled:
		_, err = r.st.Index.Delete(ctx, spec.TenantID, spec.TaskID)
		if e := r.st.Registry.ClearRunning(ctx, spec.TaskID); err == nil {
			err = e
		}
	default:
		err = r.st.Registry.ClearRunning(ctx, spec.TaskID)
	}
	if err != nil {
		r.log.Warn("executor: updating the tenant index / running set", "task", spec.TaskID, "event", typ, "error", err)
	}
	r.fire(Event{Type: string(typ), TaskID: spec.TaskID, TenantID: spec.TenantID, PlanID: spec.PlanID, Status: string(typ.Status()),
		LastCompletedStageIndex: last, StageCount: len(spec.Stages), PauseRequested: pause, Reason: reason, At: ev.At})
	return nil
}

// emitStage publishes TaskStageCompleted.
func (r *Runner) emitStage(ctx context.Context, t *taskRun, i int) error {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	r.mu.Lock()
	spec := t.spec
	status := t.status
	r.mu.Unlock()
	ev := TaskEvent{Type: EventTaskStageCompleted, TaskID: spec.TaskID, StageIndex: i, At: time.Now()}
	if err := r.applyTask(ctx, ev); err != nil {
		return err
	}
	r.fire(Event{Type: string(EventTaskStageCompleted), TaskID: spec.TaskID, TenantID: spec.TenantID, PlanID: spec.PlanID,
		Status: string(status), StageIndex: i, Stage: spec.Stages[i], LastCompletedStageIndex: i, StageCount: len(spec.Stages), At: ev.At})
	return nil
}

// heartbeat publishes the TaskProgressEvent of a running task: in the projection a repeated
// TaskStarted with a new Seq (refreshes updatedAt and pauseRequested), to hooks a TaskProgress.
func (r *Runner) heartbeat(ctx context.Context, t *taskRun) {
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	r.mu.Lock()
	if t.state != stateRunning || t.status != TaskRunning {
		r.mu.Unlock()
		return
	}
	spec, pause, last := t.spec, t.pauseRequested, t.lastCompleted
	r.mu.Unlock()
	t.seq = r.planSeq.next(t.seq)
	ev := TaskEvent{Type: EventTaskStarted, TaskID: spec.TaskID, PauseRequested: pause, Seq: t.seq, At: time.Now()}
	if err := r.applyTask(ctx, ev); err != nil {
		r.log.Warn("executor: heartbeat", "task", spec.TaskID, "error", err)
		return
	}
	r.fire(Event{Type: EventTaskProgress, TaskID: spec.TaskID, TenantID: spec.TenantID, PlanID: spec.PlanID, Status: string(TaskRunning),
		LastCompletedStageIndex: last, StageCount: len(spec.Stages), PauseRequested: pause, At: ev.At})
}

// emitPlan publishes a plan event, numbering it unless it carries a Seq already.
func (r *Runner) emitPlan(ctx context.Context, ev PlanEvent) error {
	if ev.Seq == 0 {
		ev.Seq = r.planSeq.next(0)
	}
	ev.At = time.Now()
	var err error
	for i := range 3 {
		if err = r.st.Projections.ApplyPlanEvent(ctx, ev); err == nil || !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			break
		}
		time.Sleep(time.Duration(100*(i+1)) * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if r.opts.Observer != nil {
		r.opts.Observer.ProjectionLag(time.Since(ev.At))
	}
	r.fire(Event{Type: string(ev.Type), PlanID: ev.PlanID, Status: string(ev.Type.Status()), Progress: ev.Progress, At: ev.At})
	return nil
}

// refreshPlan recomputes a plan's status and progress from its tasks' projections (so it
// works for tasks run by any instance) and publishes it.
func (r *Runner) refreshPlan(ctx context.Context, planID string) {
	if planID == "" {
		return
	}
	// The event's Seq is taken before the task projections are read: of two concurrent
	// refreshes, the one that read later (and so saw newer task states) carries the greater
	// Seq and wins. Numbered at emit time instead, a refresh that read a task as FAILED could
	// be emitted after one that read its retry COMPLETED, leaving the plan FAILED.
	seq := r.planSeq.next(0)
	p, err := r.st.Projections.GetPlan(ctx, planID)
	if err != nil || len(p.TaskIDs) == 0 {
		return
	}
	var done, terminal, failed, running, paused int
	for _, id := range p.TaskIDs {
		tp, err := r.st.Projections.GetTask(ctx, id)
		if err != nil {
			continue
		}
		switch tp.Status {
		case TaskCompleted:
			done++
		case TaskFailed, TaskCancelled:
			failed++
		case TaskRunning:
			running++
		case TaskPaused:
			paused++
		}
		if tp.Status.Terminal() {
			terminal++
		}
	}
	n := len(p.TaskIDs)
	typ := EventPlanStarted
	switch {
	case done == n:
		typ = EventPlanCompleted
	case terminal == n && failed > 0:
		typ = EventPlanFailed
	case running == 0 && paused > 0:
		typ = EventPlanPaused
	}
	if err := r.emitPlan(ctx, PlanEvent{Type: typ, PlanID: planID, Progress: float64(done) / float64(n), Seq: seq}); err != nil {
		r.log.Warn("executor: publishing the plan status", "plan", planID, "error", err)
	}
}
