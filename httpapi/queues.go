package httpapi

import (
	"net/http"
	"strconv"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// queueRoutes registers the queue admin routes (admin role). {queue} is one path segment,
// percent-decoded, so "report:queue" may be sent raw or as report%3Aqueue.
func (s *server) queueRoutes() {
	s.handle("GET /v1/queues/{queue}/stats", roleAdmin, s.queueStats)
	s.handle("GET /v1/queues/{queue}/dead", roleAdmin, s.queueDead)
	s.handle("POST /v1/queues/{queue}/dead/requeue", roleAdmin, s.queueRequeueDead)
	s.handle("POST /v1/queues/{queue}/dead/requeue-all", roleAdmin, s.queueRequeueAllDead)
	s.handle("DELETE /v1/queues/{queue}/dead", roleAdmin, s.queuePurgeDead)
	s.queueJobRoutes()
}

// queueAdmin returns the admin of the request's {queue}. Errors: EINVALID (bad name),
// ENOTFOUND (not a queue of this server).
func (s *server) queueAdmin(r *http.Request) (string, *queue.Admin, error) {
	name := r.PathValue("queue")
	if err := queue.ValidateQueueName(name); err != nil {
		return "", nil, err
	}
	var a *queue.Admin
	if s.queues != nil {
		a = s.queues(name)
	}
	if a == nil {
		return "", nil, redstate.Errorf(redstate.ENOTFOUND, "queue %q is not configured on this server", name)
	}
	return name, a, nil
}

// queueStats: GET /v1/queues/{queue}/stats → {"queue","pending","running","retrying",
// "scheduled","dead","paused"} and "pool" for a queue of a pool.
func (s *server) queueStats(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	st, err := a.Stats(r.Context())
	if err != nil {
		return err
	}
	paused, err := a.Paused(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, queue.NamedStats{Queue: name, Stats: st, Paused: paused, Pool: s.poolOf(name)})
	return nil
}

// queueDead: GET /v1/queues/{queue}/dead?start=0&count=100 → dead letters, newest first,
// streamed in chunks (see streamDeadLetters).
func (s *server) queueDead(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	start, err := queryInt(r, "start", 0)
	if err != nil {
		return err
	}
	count, err := queryInt(r, "count", 100)
	if err != nil {
		return err
	}
	if start < 0 || count < 1 || count > queue.MaxListCount {
		return redstate.Errorf(redstate.EINVALID, "start must be >= 0 and count 1..%d, got start=%d count=%d", queue.MaxListCount, start, count)
	}
	return s.streamDeadLetters(w, r, a, name, start, count)
}

// queryInt parses an optional integer query parameter. Errors: EINVALID.
func queryInt(r *http.Request, key string, def int) (int, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, redstate.Errorf(redstate.EINVALID, "query parameter %s must be an integer, got %s", key, truncate(v))
	}
	return n, nil
}

// requeueRequest is the body of POST /v1/queues/{queue}/dead/requeue.
type requeueRequest struct {
	Raw string `json:"raw"`
}

// countResponse answers the dead-letter mutations.
type countResponse struct {
	Queue    string `json:"queue"`
	Requeued *int   `json:"requeued,omitempty"`
	Purged   *int   `json:"purged,omitempty"`
}

// queueRequeueDead: POST /v1/queues/{queue}/dead/requeue {"raw": "<stored string>"} →
// {"requeued": 1}; 404 when no such dead letter.
func (s *server) queueRequeueDead(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	var req requeueRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Raw == "" {
		return redstate.Errorf(redstate.EINVALID, "raw is required: the dead letter's stored string, as listed by GET /v1/queues/{queue}/dead")
	}
	if err := a.RequeueDead(r.Context(), req.Raw); err != nil {
		return err
	}
	one := 1
	writeJSON(w, http.StatusOK, countResponse{Queue: name, Requeued: &one})
	return nil
}

// queueRequeueAllDead: POST /v1/queues/{queue}/dead/requeue-all → {"requeued": n}.
func (s *server) queueRequeueAllDead(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	n, err := a.RequeueAllDead(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, countResponse{Queue: name, Requeued: &n})
	return nil
}

// queuePurgeDead: DELETE /v1/queues/{queue}/dead → {"purged": n}.
func (s *server) queuePurgeDead(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	n, err := a.PurgeDead(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, countResponse{Queue: name, Purged: &n})
	return nil
}
