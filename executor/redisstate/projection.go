package redisstate

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.ProjectionStore = (*Projections)(nil)

// Projections is the Redis executor.ProjectionStore: the Hashes Keys.Task(id) and
// Keys.Plan(id) with the seed's fields (stageNames and taskIds as JSON array strings,
// booleans as "true"/"false", times as "2006-01-02T15:04:05" UTC) plus "eventOrder", written
// by applyTaskScript / applyPlanScript with a PX TTL refreshed on every event.
type Projections struct{ base }

// NewProjections returns the projection store on client (TTL default
// executor.DefaultProjectionTTL). Errors: EINVALID.
func NewProjections(client redis.UniversalClient, opts Options) (*Projections, error) {
	b, err := newBase(client, opts, executor.DefaultProjectionTTL, "projection store")
	if err != nil {
		return nil, err
	}
	return &Projections{b}, nil
}

func jsonList(v []string) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v) // []string always encodes
	return string(b)
}

// ApplyTaskEvent implements executor.ProjectionStore.
func (s *Projections) ApplyTaskEvent(ctx context.Context, ev executor.TaskEvent) error {
	if err := executor.ValidateTaskEvent(ev); err != nil {
		return err
	}
	kind, stageNames := "status", ""
	switch ev.Type {
	case executor.EventTaskCreated:
		kind, stageNames = "created", jsonList(ev.StageNames)
	case executor.EventTaskStageCompleted:
		kind = "stage"
	}
	status := ev.Type.Status()
	err := applyTaskScript.Run(ctx, s.client, []string{s.keys.Task(ev.TaskID)},
		ms(s.ttl), kind, executor.EventOrder(ev.Seq, status.Terminal(), ev.At), string(status),
		strconv.FormatBool(ev.PauseRequested), ev.TaskID, ev.TenantID, ev.PlanID, stageNames,
		ev.StageIndex, executor.FormatTime(ev.At)).Err()
	return mapErr(err, "apply task event")
}

// ApplyPlanEvent implements executor.ProjectionStore.
func (s *Projections) ApplyPlanEvent(ctx context.Context, ev executor.PlanEvent) error {
	if err := executor.ValidatePlanEvent(ev); err != nil {
		return err
	}
	ready, maxc := "0", ""
	if ev.Type == executor.EventPlanReady {
		ready = "1"
	}
	if ev.MaxConcurrency > 0 {
		maxc = strconv.Itoa(ev.MaxConcurrency)
	}
	status := ev.Type.Status()
	err := applyPlanScript.Run(ctx, s.client, []string{s.keys.Plan(ev.PlanID)},
		ms(s.ttl), ready, executor.EventOrder(ev.Seq, status.Terminal(), ev.At), string(status),
		strconv.FormatFloat(ev.Progress, 'f', -1, 64), ev.PlanID, jsonList(ev.TaskIDs), maxc,
		executor.FormatTime(ev.At)).Err()
	return mapErr(err, "apply plan event")
}

// GetTask implements executor.ProjectionStore.
func (s *Projections) GetTask(ctx context.Context, taskID string) (executor.TaskProjection, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return executor.TaskProjection{}, err
	}
	h, err := s.client.HGetAll(ctx, s.keys.Task(taskID)).Result()
	if err != nil {
		return executor.TaskProjection{}, mapErr(err, "get task projection")
	}
	if len(h) == 0 {
		return executor.TaskProjection{}, redstate.Errorf(redstate.ENOTFOUND, "no projection for task %s", taskID)
	}
	d := decoder{}
	p := executor.TaskProjection{
		TaskID:                  h["taskId"],
		TenantID:                h["tenantId"],
		PlanID:                  h["planId"],
		Status:                  executor.TaskStatus(h["status"]),
		PauseRequested:          h["pauseRequested"] == "true",
		StageNames:              d.list(h["stageNames"]),
		LastCompletedStageIndex: d.int(h["lastCompletedStageIndex"], -1),
		CreatedAt:               d.time(h["createdAt"]),
		UpdatedAt:               d.time(h["updatedAt"]),
	}
	return p, d.result("task " + taskID)
}

// GetPlan implements executor.ProjectionStore.
func (s *Projections) GetPlan(ctx context.Context, planID string) (executor.PlanProjection, error) {
	if err := executor.ValidateID("planId", planID); err != nil {
		return executor.PlanProjection{}, err
	}
	h, err := s.client.HGetAll(ctx, s.keys.Plan(planID)).Result()
	if err != nil {
		return executor.PlanProjection{}, mapErr(err, "get plan projection")
	}
	if len(h) == 0 {
		return executor.PlanProjection{}, redstate.Errorf(redstate.ENOTFOUND, "no projection for plan %s", planID)
	}
	d := decoder{}
	p := executor.PlanProjection{
		PlanID:         h["planId"],
		Status:         executor.PlanStatus(h["status"]),
		TaskIDs:        d.list(h["taskIds"]),
		Progress:       d.float(h["progress"]),
		MaxConcurrency: d.int(h["maxConcurrency"], 0),
		CreatedAt:      d.time(h["createdAt"]),
		UpdatedAt:      d.time(h["updatedAt"]),
	}
	return p, d.result("plan " + planID)
}

// decoder parses hash fields, remembering the first failure.
type decoder struct{ err error }

func (d *decoder) list(s string) []string {
	if s == "" {
		return nil
	}
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil && d.err == nil {
		d.err = err
	}
	return v
}

func (d *decoder) int(s string, def int) int {
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil && d.err == nil {
		d.err = err
	}
	return v
}

func (d *decoder) float(s string) float64 {
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && d.err == nil {
		d.err = err
	}
	return v
}

func (d *decoder) time(s string) time.Time {
	t, err := executor.ParseTime(s)
	if err != nil && d.err == nil {
		d.err = err
	}
	return t
}

func (d *decoder) result(what string) error {
	if d.err != nil {
		return redstate.Wrap(redstate.EINTERNAL, d.err, "decode projection of "+what)
	}
	return nil
}
