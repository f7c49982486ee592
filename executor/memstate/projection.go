package memstate

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.ProjectionStore = (*Projections)(nil)

// Projections is the memory executor.ProjectionStore. Safe for concurrent use.
type Projections struct {
	opts   Options
	mu     sync.Mutex
	tasks  map[string]entry[taskRow]
	plans  map[string]entry[planRow]
	writes int
}

type taskRow struct {
	p     executor.TaskProjection
	order string // executor.EventOrder of the event that set the status ("" for none)
}

type planRow struct {
	p     executor.PlanProjection
	order string
}

// NewProjections returns an empty store (TTL default executor.DefaultProjectionTTL).
func NewProjections(opts Options) *Projections {
	return &Projections{
		opts:  opts.withDefaults(executor.DefaultProjectionTTL),
		tasks: map[string]entry[taskRow]{},
		plans: map[string]entry[planRow]{},
	}
}

func second(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// ApplyTaskEvent implements executor.ProjectionStore.
func (s *Projections) ApplyTaskEvent(_ context.Context, ev executor.TaskEvent) error {
	if err := executor.ValidateTaskEvent(ev); err != nil {
		return err
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tasks[ev.TaskID]
	if !ok || e.expired(now) {
		e = entry[taskRow]{val: taskRow{p: executor.TaskProjection{TaskID: ev.TaskID, LastCompletedStageIndex: -1}}}
	}
	r := &e.val
	if ev.TenantID != "" {
		r.p.TenantID = ev.TenantID
	}
	if ev.PlanID != "" {
		r.p.PlanID = ev.PlanID
	}
	at := second(ev.At)
	if ev.Type == executor.EventTaskCreated {
		if ev.StageNames != nil {
			r.p.StageNames = slices.Clone(ev.StageNames)
		}
		r.p.CreatedAt = at
	}
	if ev.Type == executor.EventTaskStageCompleted {
		r.p.LastCompletedStageIndex = max(r.p.LastCompletedStageIndex, ev.StageIndex)
	} else if order := executor.EventOrder(ev.Seq, ev.Type.Status().Terminal(), ev.At); order > r.order {
		r.order = order
		r.p.Status = ev.Type.Status()
		r.p.PauseRequested = ev.PauseRequested
	}
	if at.After(r.p.UpdatedAt) {
		r.p.UpdatedAt = at
	}
	e.expires = now.Add(s.opts.TTL)
	s.tasks[ev.TaskID] = e
	s.afterWrite(now)
	return nil
}

// ApplyPlanEvent implements executor.ProjectionStore.
func (s *Projections) ApplyPlanEvent(_ context.Context, ev executor.PlanEvent) error {
	if err := executor.ValidatePlanEvent(ev); err != nil {
		return err
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.plans[ev.PlanID]
	if !ok || e.expired(now) {
		e = entry[planRow]{val: planRow{p: executor.PlanProjection{PlanID: ev.PlanID}}}
	}
	r := &e.val
	if ev.TaskIDs != nil {
		r.p.TaskIDs = slices.Clone(ev.TaskIDs)
	}
	if ev.MaxConcurrency > 0 {
		r.p.MaxConcurrency = ev.MaxConcurrency
	}
	at := second(ev.At)
	if ev.Type == executor.EventPlanReady {
		r.p.CreatedAt = at
	}
	if order := executor.EventOrder(ev.Seq, ev.Type.Status().Terminal(), ev.At); order > r.order {
		r.order = order
		r.p.Status = ev.Type.Status()
		r.p.Progress = ev.Progress
	}
	if at.After(r.p.UpdatedAt) {
		r.p.UpdatedAt = at
	}
	e.expires = now.Add(s.opts.TTL)
	s.plans[ev.PlanID] = e
	s.afterWrite(now)
	return nil
}

func (s *Projections) afterWrite(now time.Time) {
	if s.writes++; s.writes%sweepEvery == 0 {
		sweep(s.tasks, now)
		sweep(s.plans, now)
	}
}

// GetTask implements executor.ProjectionStore.
func (s *Projections) GetTask(_ context.Context, taskID string) (executor.TaskProjection, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return executor.TaskProjection{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tasks[taskID]
	if !ok || e.expired(s.opts.Now()) {
		return executor.TaskProjection{}, redstate.Errorf(redstate.ENOTFOUND, "no projection for task %s", taskID)
	}
	p := e.val.p
	p.StageNames = slices.Clone(p.StageNames)
	return p, nil
}

// GetPlan implements executor.ProjectionStore.
func (s *Projections) GetPlan(_ context.Context, planID string) (executor.PlanProjection, error) {
	if err := executor.ValidateID("planId", planID); err != nil {
		return executor.PlanProjection{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.plans[planID]
	if !ok || e.expired(s.opts.Now()) {
		return executor.PlanProjection{}, redstate.Errorf(redstate.ENOTFOUND, "no projection for plan %s", planID)
	}
	p := e.val.p
	p.TaskIDs = slices.Clone(p.TaskIDs)
	return p, nil
}
