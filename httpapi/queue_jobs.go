package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// queueJobRoutes registers the routes of single jobs and of pausing a queue: enqueue, inspect,
// cancel, list and requeue jobs with a record (queue.Producer.EnqueueJob, queue.Admin), and
// pause or resume a queue's workers.
func (s *server) queueJobRoutes() {
	s.handle("POST /v1/queues/{queue}/jobs", roleWrite, s.enqueueJob)
	s.handle("GET /v1/queues/{queue}/jobs", roleRead, s.listJobs)
	s.handle("GET /v1/queues/{queue}/jobs/{id}", roleRead, s.getJob)
	s.handle("DELETE /v1/queues/{queue}/jobs/{id}", roleWrite, s.cancelJob)
	s.handle("POST /v1/queues/{queue}/jobs/{id}/requeue", roleWrite, s.requeueJob)
	s.handle("POST /v1/queues/{queue}/pause", roleWrite, s.pauseQueue)
	s.handle("POST /v1/queues/{queue}/resume", roleWrite, s.resumeQueue)
}

// enqueueRequest is the body of POST /v1/queues/{queue}/jobs: the payload and the options of
// queue.JobOptions, durations as Go duration strings and times as RFC 3339.
type enqueueRequest struct {
	Payload     json.RawMessage `json:"payload"`
	ID          string          `json:"id"`
	Delay       string          `json:"delay"`
	ProcessAt   string          `json:"processAt"`
	MaxRetries  *int            `json:"maxRetries"`
	RetryDelays []string        `json:"retryDelays"`
	Timeout     string          `json:"timeout"`
	UniqueFor   string          `json:"uniqueFor"`
	Retention   string          `json:"retention"`
}

// options converts the request's options. Errors: EINVALID naming the member.
func (req enqueueRequest) options() (queue.JobOptions, error) {
	o := queue.JobOptions{ID: req.ID, MaxRetries: req.MaxRetries}
	if req.Delay != "" && req.ProcessAt != "" {
		return o, redstate.Errorf(redstate.EINVALID, "give delay or processAt, not both")
	}
	var err error
	for _, d := range []struct {
		name  string
		value string
		dst   *time.Duration
	}{{"delay", req.Delay, &o.Delay}, {"timeout", req.Timeout, &o.Timeout}, {"uniqueFor", req.UniqueFor, &o.UniqueFor}, {"retention", req.Retention, &o.Retention}} {
		if *d.dst, err = parseDuration(d.name, d.value); err != nil {
			return o, err
		}
	}
	for _, v := range req.RetryDelays {
		d, err := parseDuration("retryDelays", v)
		if err != nil {
			return o, err
		}
		o.RetryDelays = append(o.RetryDelays, d)
	}
	if req.ProcessAt != "" {
		if o.ProcessAt, err = time.Parse(time.RFC3339Nano, req.ProcessAt); err != nil {
			return o, redstate.Errorf(redstate.EINVALID, "processAt must be an RFC 3339 time such as \"2025-01-15T10:30:00Z\", got %q", truncate(req.ProcessAt))
		}
	}
	return o, o.Validate()
}

// parseDuration parses the optional Go duration member name ("" is 0). Errors: EINVALID.
func parseDuration(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, redstate.Errorf(redstate.EINVALID, "%s must be a Go duration such as \"5s\" or \"1h30m\", got %q", name, truncate(v))
	}
	return d, nil
}

// jobPath is the URL path of a job.
func jobPath(queueName, id string) string {
	return "/v1/queues/" + url.PathEscape(queueName) + "/jobs/" + url.PathEscape(id)
}

// enqueueJob: POST /v1/queues/{queue}/jobs {"payload", options…} → 201 with the job and its
// Location; 200 with the existing job when a job of the body's id exists; 409 when a unique
// lock refuses it (the message names the job holding it).
func (s *server) enqueueJob(w http.ResponseWriter, r *http.Request) error {
	name, _, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	var p *queue.Producer
	if s.producers != nil {
		p = s.producers(name)
	}
	if p == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "queue %q takes no jobs on this server", name)
	}
	var req enqueueRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if len(req.Payload) == 0 || string(req.Payload) == "null" {
		return redstate.Errorf(redstate.EINVALID, "payload is required: the job's input, any JSON value but null")
	}
	opts, err := req.options()
	if err != nil {
		return err
	}
	job, created, err := p.EnqueueJob(r.Context(), req.Payload, opts)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	w.Header().Set("Location", jobPath(name, job.ID))
	writeJSON(w, status, job.Shown())
	return nil
}

// queueJobID returns the request's queue admin and its valid {id}. Errors: EINVALID,
// ENOTFOUND.
func (s *server) queueJobID(r *http.Request) (*queue.Admin, string, error) {
	_, a, err := s.queueAdmin(r)
	if err != nil {
		return nil, "", err
	}
	id := r.PathValue("id")
	if err := queue.ValidateJobID(id); err != nil {
		return nil, "", err
	}
	return a, id, nil
}

// getJob: GET /v1/queues/{queue}/jobs/{id} → the job's record; 404 when there is none (never
// enqueued with a record, or its retention passed).
func (s *server) getJob(w http.ResponseWriter, r *http.Request) error {
	a, id, err := s.queueJobID(r)
	if err != nil {
		return err
	}
	job, err := a.Job(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, job.Shown())
	return nil
}

// cancelJob: DELETE /v1/queues/{queue}/jobs/{id} → 200 with the job cancelled (it was
// scheduled, pending or retrying, or already cancelled: a repeated DELETE answers alike), 202
// with the job still active and cancelRequested (its worker is asked to stop it), 409 when it
// is done or dead.
func (s *server) cancelJob(w http.ResponseWriter, r *http.Request) error {
	a, id, err := s.queueJobID(r)
	if err != nil {
		return err
	}
	job, err := a.CancelJob(r.Context(), id)
	if redstate.ErrorCode(err) == redstate.ECONFLICT {
		// Cancelled is final, so a job read cancelled after the conflict stays so.
		if cur, rerr := a.Job(r.Context(), id); rerr == nil && cur.State == queue.StateCancelled {
			job, err = cur, nil
		}
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if job.State == queue.StateActive {
		status = http.StatusAccepted
	}
	writeJSON(w, status, job.Shown())
	return nil
}

// listJobs: GET /v1/queues/{queue}/jobs?state=…&cursor=…&limit=… → a queue.JobPage.
func (s *server) listJobs(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	state := queue.JobState(q.Get("state"))
	if !state.Valid() {
		return redstate.Errorf(redstate.EINVALID, "query parameter state is required, one of %v; got %q", queue.JobStates, truncate(string(state)))
	}
	limit, err := queryInt(r, "limit", 100)
	if err != nil {
		return err
	}
	jobs, next, err := a.Jobs(r.Context(), state, q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, queue.NewJobPage(name, state, jobs, next))
	return nil
}

// requeueJob: POST /v1/queues/{queue}/jobs/{id}/requeue → the dead job, back on pending; 409
// when it is not dead, 404 when its record or dead letter is gone.
func (s *server) requeueJob(w http.ResponseWriter, r *http.Request) error {
	a, id, err := s.queueJobID(r)
	if err != nil {
		return err
	}
	job, err := a.RequeueJob(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, job.Shown())
	return nil
}

// pauseQueue: POST /v1/queues/{queue}/pause → {"queue","paused":true}. Idempotent.
func (s *server) pauseQueue(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	if err := a.Pause(r.Context()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, queue.PauseState{Queue: name, Paused: true})
	return nil
}

// resumeQueue: POST /v1/queues/{queue}/resume → {"queue","paused":false}. Idempotent.
func (s *server) resumeQueue(w http.ResponseWriter, r *http.Request) error {
	name, a, err := s.queueAdmin(r)
	if err != nil {
		return err
	}
	if err := a.Resume(r.Context()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, queue.PauseState{Queue: name, Paused: false})
	return nil
}
