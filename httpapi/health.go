package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/redstate/redstate"
)

// readyTimeout bounds one readiness check.
const readyTimeout = 2 * time.Second

// statusBody is the body of /healthz and /readyz success answers.
type statusBody struct {
	Status string `json:"status"`
}

// healthz reports that the process is up: 200 {"status":"ok"}. It never touches the backend.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
	return nil
}

// readyz reports whether the backend can serve: 200 {"status":"ready"}, or 503
// {"code":"unavailable","message":"redis: <cause>"} with Retry-After.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			return redstate.Wrap(redstate.EUNAVAILABLE, err, "redis: "+err.Error())
		}
	}
	writeJSON(w, http.StatusOK, statusBody{Status: "ready"})
	return nil
}
