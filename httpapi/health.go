package httpapi

import (
	"context"
	"net/http"
	"strings"
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

// readyz reports whether the server can serve every block: 200 {"status":"ready"}, or 503
// {"code":"unavailable","message":...} with Retry-After while a component is unready (Redis
// does not answer, a block runs degraded). The route needs no token, so the message says only
// what is down, never an address or a dial error (those are logged).
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		var down []string
		for _, st := range s.health(ctx) {
			if st.Unready != "" {
				down = append(down, st.Unready)
			}
		}
		if len(down) > 0 {
			return redstate.Errorf(redstate.EUNAVAILABLE, "not ready: %s", strings.Join(down, "; "))
		}
	}
	writeJSON(w, http.StatusOK, statusBody{Status: "ready"})
	return nil
}
