package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// executorLock is one held tenant lock of GET /v1/executor/state.
type executorLock struct {
	TenantID string `json:"tenantId"`
	// Holder is the lock owner: a task id, or "orphan-scan".
	Holder string `json:"holder"`
}

// executorState answers the executor's state snapshot: keys per type and the held tenant locks
// (sorted by tenant). Redis: one SCAN per key type, so it is an admin route.
func (s *server) executorState(w http.ResponseWriter, r *http.Request) error {
	ex, err := s.runner()
	if err != nil {
		return err
	}
	st, err := ex.InspectState(r.Context())
	if err != nil {
		return err
	}
	locks := make([]executorLock, 0, len(st.Locks))
	for tenant, holder := range st.Locks {
		locks = append(locks, executorLock{TenantID: tenant, Holder: holder})
	}
	slices.SortFunc(locks, func(a, b executorLock) int { return strings.Compare(a.TenantID, b.TenantID) })
	keys := st.Keys
	if keys == nil {
		keys = map[string]int64{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys, "locks": locks})
	return nil
}
