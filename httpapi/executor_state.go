package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/redstate/redstate/executor"
)

// ExecutorLister lists the executor's state for operators (executor/redisstate.Lister).
type ExecutorLister interface {
	Plans(ctx context.Context) ([]executor.PlanProjection, error)
	Locks(ctx context.Context) ([]executor.LockInfo, error)
	Checkpoints(ctx context.Context) ([]executor.CheckpointInfo, error)
}

// executorState answers the executor's state for the dashboard (executorStateDoc). Redis:
// SCANs, so it is an admin route.
func (s *server) executorState(w http.ResponseWriter, r *http.Request) error {
	ex, err := s.runner()
	if err != nil {
		return err
	}
	body, err := s.executorStateDoc(r.Context(), ex)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// executorStateDoc is the executor's state for the dashboard: key counts, the held tenant
// locks (with fence and time left when a lister is configured, i.e. on Redis), and with a
// lister the plans and checkpoints.
func (s *server) executorStateDoc(ctx context.Context, ex *executor.Runner) (map[string]any, error) {
	st, err := ex.InspectState(ctx)
	if err != nil {
		return nil, err
	}
	keys := st.Keys
	if keys == nil {
		keys = map[string]int64{}
	}
	body := map[string]any{"keys": keys}
	if s.execLister == nil {
		locks := make([]executor.LockInfo, 0, len(st.Locks))
		for tenant, holder := range st.Locks {
			locks = append(locks, executor.LockInfo{TenantID: tenant, Holder: holder})
		}
		slices.SortFunc(locks, func(a, b executor.LockInfo) int { return strings.Compare(a.TenantID, b.TenantID) })
		body["locks"], body["plans"], body["checkpoints"] = locks, []executor.PlanProjection{}, []executor.CheckpointInfo{}
		return body, nil
	}
	locks, err := s.execLister.Locks(ctx)
	if err != nil {
		return nil, err
	}
	plans, err := s.execLister.Plans(ctx)
	if err != nil {
		return nil, err
	}
	cps, err := s.execLister.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	body["locks"], body["plans"], body["checkpoints"] = emptyIfNil(locks), emptyIfNil(plans), emptyIfNil(cps)
	return body, nil
}

// emptyIfNil returns s, or an empty slice for nil (a JSON [] instead of null).
func emptyIfNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
