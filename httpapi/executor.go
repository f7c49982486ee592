package httpapi

import (
	"context"
	"net/http"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// executorRoutes registers the stage executor's routes: the query API plus control
// (docs/executor.md).
func (s *server) executorRoutes() {
	s.handle("POST /v1/executor/plans", roleWrite, s.createPlan)
	s.handle("GET /v1/executor/plans/{planId}", roleRead, s.getPlan)
	s.handle("POST /v1/executor/plans/{planId}/{action}", roleWrite, s.planAction)
	s.handle("GET /v1/executor/tasks/{taskId}", roleRead, s.getTask)
	s.handle("GET /v1/executor/tenants/{tenantId}/task", roleRead, s.getTenantTask)
	s.handle("GET /v1/executor/tenants/{tenantId}/checkpoint", roleRead, s.getTenantCheckpoint)
	s.handle("POST /v1/executor/tenants/{tenantId}/retry", roleAdmin, s.retryTenant)
	s.handle("POST /v1/executor/tenants/{tenantId}/{action}", roleWrite, s.tenantAction)
	s.handle("GET /v1/executor/state", roleAdmin, s.executorState)
}

// runner returns the executor serving this request. Errors: ENOTFOUND (not enabled),
// EUNAVAILABLE (degraded).
func (s *server) runner() (*executor.Runner, error) {
	if s.execFn != nil {
		return s.execFn()
	}
	if s.executor == nil {
		return nil, redstate.Errorf(redstate.ENOTFOUND, "the stage executor is not enabled on this server")
	}
	return s.executor, nil
}

// pathID returns the validated path value name.
func pathID(r *http.Request, name string) (string, error) {
	id := r.PathValue(name)
	if err := executor.ValidateID(name, id); err != nil {
		return "", err
	}
	return id, nil
}

// createPlanRequest is the body of POST /v1/executor/plans.
type createPlanRequest struct {
	executor.PlanDef
	// Start starts the plan at once (default true).
	Start *bool `json:"start,omitempty"`
}

// createPlan: POST /v1/executor/plans {planId?, maxConcurrency, tasks:[{taskId?, tenantId,
// stages, handler, contextData?, retry?}], start?} → 201 the plan status.
func (s *server) createPlan(w http.ResponseWriter, r *http.Request) error {
	ex, err := s.runner()
	if err != nil {
		return err
	}
	var req createPlanRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	start := req.Start == nil || *req.Start
	// The plan outlives the request.
	def, err := ex.CreatePlan(context.WithoutCancel(r.Context()), req.PlanDef, start)
	if err != nil {
		return err
	}
	st, err := ex.PlanStatus(r.Context(), def.PlanID)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/executor/plans/"+def.PlanID)
	writeJSON(w, http.StatusCreated, st)
	return nil
}

// getPlan: GET /v1/executor/plans/{planId} → plan projection with its tasks (queryPlanStatus).
func (s *server) getPlan(w http.ResponseWriter, r *http.Request) error {
	return readByPath(s, w, r, "planId", (*executor.Runner).PlanStatus)
}

// actionResult is one task's answer to a plan-wide action.
type actionResult struct {
	TaskID string `json:"taskId"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
}

// planAction: POST /v1/executor/plans/{planId}/{pause|resume|cancel} → 200 per-task results.
func (s *server) planAction(w http.ResponseWriter, r *http.Request) error {
	ex, id, err := s.runnerAndID(r, "planId")
	if err != nil {
		return err
	}
	act, err := action(ex, r.PathValue("action"))
	if err != nil {
		return err
	}
	ids, err := ex.PlanTasks(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]actionResult, 0, len(ids))
	for _, tid := range ids {
		err := act(context.WithoutCancel(r.Context()), tid)
		res := actionResult{TaskID: tid, OK: err == nil}
		if err != nil {
			if !redstate.IsCode(err, redstate.ECONFLICT) {
				return err
			}
			res.Error = redstate.ErrorMessage(err)
		}
		out = append(out, res)
	}
	writeJSON(w, http.StatusOK, map[string]any{"planId": id, "action": r.PathValue("action"), "tasks": out})
	return nil
}

// runnerAndID returns the executor and the validated path id param of r.
func (s *server) runnerAndID(r *http.Request, param string) (*executor.Runner, string, error) {
	ex, err := s.runner()
	if err != nil {
		return nil, "", err
	}
	id, err := pathID(r, param)
	if err != nil {
		return nil, "", err
	}
	return ex, id, nil
}

// readByPath answers a read whose only input is the path id param: it resolves the runner and
// the id, calls read and writes the result as JSON (200).
func readByPath[T any](s *server, w http.ResponseWriter, r *http.Request, param string, read func(*executor.Runner, context.Context, string) (T, error)) error {
	ex, id, err := s.runnerAndID(r, param)
	if err != nil {
		return err
	}
	v, err := read(ex, r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func action(ex *executor.Runner, name string) (func(context.Context, string) error, error) {
	switch name {
	case "pause":
		return ex.Pause, nil
	case "resume":
		return ex.Resume, nil
	case "cancel":
		return ex.Cancel, nil
	}
	return nil, redstate.Errorf(redstate.ENOTFOUND, "unknown action %q; actions are pause, resume and cancel", name)
}

// getTask: GET /v1/executor/tasks/{taskId} → task status.
func (s *server) getTask(w http.ResponseWriter, r *http.Request) error {
	return readByPath(s, w, r, "taskId", (*executor.Runner).TaskStatus)
}

// getTenantTask: GET /v1/executor/tenants/{tenantId}/task → the tenant's current task with
// progress (queryTaskStatusByTenant).
func (s *server) getTenantTask(w http.ResponseWriter, r *http.Request) error {
	return readByPath(s, w, r, "tenantId", (*executor.Runner).TaskStatusByTenant)
}

// getTenantCheckpoint: GET /v1/executor/tenants/{tenantId}/checkpoint →
// {"tenantId","taskId","hasCheckpoint","checkpoint"[,"checkpointError"]} (hasCheckpoint; an
// unreadable checkpoint is shown as such, not a 500).
func (s *server) getTenantCheckpoint(w http.ResponseWriter, r *http.Request) error {
	ex, id, err := s.runnerAndID(r, "tenantId")
	if err != nil {
		return err
	}
	taskID, state, reason, err := ex.TenantCheckpoint(r.Context(), id)
	if err != nil {
		return err
	}
	body := map[string]any{"tenantId": id, "taskId": taskID, "hasCheckpoint": state == executor.CheckpointPresent, "checkpoint": state}
	if reason != "" {
		body["checkpointError"] = reason
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// retryRequest is the body of POST /v1/executor/tenants/{tenantId}/retry.
type retryRequest struct {
	FromCheckpoint bool `json:"fromCheckpoint"`
}

// retryTenant: POST /v1/executor/tenants/{tenantId}/retry {"fromCheckpoint":true} → 202
// {"tenantId","taskId","fromCheckpoint"} (retryTaskByTenant; admin).
func (s *server) retryTenant(w http.ResponseWriter, r *http.Request) error {
	ex, id, err := s.runnerAndID(r, "tenantId")
	if err != nil {
		return err
	}
	var req retryRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	taskID, err := ex.RetryByTenant(context.WithoutCancel(r.Context()), id, req.FromCheckpoint)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"tenantId": id, "taskId": taskID, "fromCheckpoint": req.FromCheckpoint})
	return nil
}

// tenantAction: POST /v1/executor/tenants/{tenantId}/{pause|resume|cancel} → 202
// {"tenantId","taskId","action"}.
func (s *server) tenantAction(w http.ResponseWriter, r *http.Request) error {
	ex, id, err := s.runnerAndID(r, "tenantId")
	if err != nil {
		return err
	}
	act, err := action(ex, r.PathValue("action"))
	if err != nil {
		return err
	}
	taskID, err := ex.TaskIDByTenant(r.Context(), id)
	if err != nil {
		return err
	}
	if err := act(context.WithoutCancel(r.Context()), taskID); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"tenantId": id, "taskId": taskID, "action": r.PathValue("action")})
	return nil
}
