package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// jobsQueue is the configured queue of the job route tests; otherQueue is not configured.
const (
	jobsQueue  = "jobs:q"
	otherQueue = "other:q"
)

// jobsAPI is an API serving jobsQueue on broker.
type jobsAPI struct {
	*testAPI
	broker queue.Broker
	admin  *queue.Admin
}

// newJobsAPI starts an API whose only queue is jobsQueue on broker, with a body limit of 4 KiB
// and the given tokens (none: auth off).
func newJobsAPI(t *testing.T, broker queue.Broker, tokens ...config.Token) *jobsAPI {
	t.Helper()
	admin, err := queue.NewAdmin(broker, jobsQueue)
	if err != nil {
		t.Fatal(err)
	}
	producer, err := queue.NewProducer(broker, jobsQueue)
	if err != nil {
		t.Fatal(err)
	}
	api := newTestAPI(t, func(c *Config, d *Deps) {
		c.MaxBodyBytes = 4096
		c.Tokens = tokens
		d.Queues = func(name string) *queue.Admin {
			if name == jobsQueue {
				return admin
			}
			return nil
		}
		d.Producers = func(name string) *queue.Producer {
			if name == jobsQueue {
				return producer
			}
			return nil
		}
	})
	return &jobsAPI{testAPI: api, broker: broker, admin: admin}
}

// job decodes a job answer.
func (a *jobsAPI) job(r response) queue.Job {
	a.t.Helper()
	return decode[queue.Job](a.t, r)
}

// await polls job id until it is in state, and returns it.
func (a *jobsAPI) await(id string, state queue.JobState) queue.Job {
	a.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := a.do("GET", "/v1/queues/jobs:q/jobs/"+id, "")
		if r.status != http.StatusOK {
			a.t.Fatalf("GET job %s: %d %s", id, r.status, r.body)
		}
		if j := a.job(r); j.State == state || time.Now().After(deadline) {
			if j.State != state {
				a.t.Fatalf("job %s is %s after 10s, want %s: %s", id, j.State, state, r.body)
			}
			return j
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runJobsWorker consumes jobsQueue until the test ends. By payload "kind": "flaky" fails its
// first attempt and then succeeds with a result; "block" runs until its ctx is cancelled;
// "fail" fails permanently.
func (a *jobsAPI) runJobsWorker(t *testing.T) {
	t.Helper()
	handler := func(ctx context.Context, d *queue.Delivery) error {
		var p struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(d.Message.Payload, &p)
		switch p.Kind {
		case "flaky":
			if d.Message.RetryCount == 0 {
				return errors.New("first attempt fails")
			}
			return queue.SetResult(ctx, json.RawMessage(`{"sent":3}`))
		case "block":
			<-ctx.Done()
			return ctx.Err()
		default:
			return queue.Permanent(errors.New("cannot do " + p.Kind))
		}
	}
	w, err := queue.NewWorker(a.broker, handler, queue.WorkerSettings{
		Queue: jobsQueue, Concurrency: 4, Lease: 300 * time.Millisecond,
		BlockTimeout: 50 * time.Millisecond, PromoteInterval: 10 * time.Millisecond, ShutdownTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestQueueJobs_Memory(t *testing.T) {
	t.Run("Requests", func(t *testing.T) { testJobRequests(t, newJobsAPI(t, memqueue.NewBroker(memqueue.Options{}))) })
	t.Run("Lifecycle", func(t *testing.T) { testJobLifecycle(t, newJobsAPI(t, memqueue.NewBroker(memqueue.Options{}))) })
}

// TestQueueJobs_Roles: reading jobs needs read, changing them write; the dead-letter routes
// and the stats stay admin.
func TestQueueJobs_Roles(t *testing.T) {
	a := newJobsAPI(t, memqueue.NewBroker(memqueue.Options{}),
		config.Token{Name: "reader", Token: "r-secret", Roles: []string{"read"}},
		config.Token{Name: "writer", Token: "w-secret", Roles: []string{"write"}})
	a.token = "r-secret"
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":1}`), http.StatusForbidden, "forbidden")
	wantError(t, a.do("POST", "/v1/queues/jobs:q/pause", ""), http.StatusForbidden, "forbidden")
	a.token = "w-secret"
	r := a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":1,"id":"j1"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("enqueue as writer: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/v1/queues/jobs:q/pause", "/v1/queues/jobs:q/resume"} {
		if r := a.do("POST", path, ""); r.status != http.StatusOK {
			t.Errorf("%s as writer: %d %s", path, r.status, r.body)
		}
	}
	wantError(t, a.do("GET", "/v1/queues/jobs:q/stats", ""), http.StatusForbidden, "forbidden")
	a.token = "r-secret"
	if r := a.do("GET", "/v1/queues/jobs:q/jobs/j1", ""); r.status != http.StatusOK {
		t.Errorf("GET job as reader: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/v1/queues/jobs:q/jobs?state=pending", ""); r.status != http.StatusOK {
		t.Errorf("list as reader: %d %s", r.status, r.body)
	}
	wantError(t, a.do("DELETE", "/v1/queues/jobs:q/jobs/j1", ""), http.StatusForbidden, "forbidden")
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs/j1/requeue", ""), http.StatusForbidden, "forbidden")
	a.token = ""
	wantError(t, a.do("GET", "/v1/queues/jobs:q/jobs/j1", ""), http.StatusUnauthorized, "unauthorized")
}

func TestQueueJobs_Redis(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		b, err := redisqueue.New(client, redisqueue.Options{Namespace: "jobs-"})
		if err != nil {
			t.Fatal(err)
		}
		t.Run("Requests", func(t *testing.T) { testJobRequests(t, newJobsAPI(t, b)) })
		// Requests leaves jobs behind: a fresh namespace for the worker.
		b2, err := redisqueue.New(client, redisqueue.Options{Namespace: "life-"})
		if err != nil {
			t.Fatal(err)
		}
		t.Run("Lifecycle", func(t *testing.T) { testJobLifecycle(t, newJobsAPI(t, b2)) })
	})
}

// testJobRequests covers enqueue, inspect, list, cancel, requeue and pause without a worker:
// every answer, including the errors, is validated against openapi.json by do.
func testJobRequests(t *testing.T, a *jobsAPI) {
	// Enqueue: 201 with Location, pending at once, scheduled with a delay or processAt.
	r := a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":{"to":"a@example.com"},"maxRetries":2,"retryDelays":["1s","5s"],"timeout":"30s"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("enqueue: %d %s", r.status, r.body)
	}
	now := a.job(r)
	if now.State != queue.StatePending || now.Queue != jobsQueue || len(now.ID) == 0 || r.header.Get("Location") != "/v1/queues/jobs:q/jobs/"+now.ID {
		t.Fatalf("enqueue answer %s, Location %q", r.body, r.header.Get("Location"))
	}
	if spec := now.Message.Job; spec == nil || *spec.MaxRetries != 2 || len(spec.RetryDelaysMs) != 2 || spec.RetryDelaysMs[1] != 5000 || spec.TimeoutMs != 30000 {
		t.Errorf("job options as stored: %s", r.body)
	}
	if !strings.Contains(string(r.body), `"attempts":[]`) || string(now.Message.Payload) != `{"to":"a@example.com"}` {
		t.Errorf("new job: %s", r.body)
	}
	r = a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":[1,2],"id":"mail-1","delay":"1h","retention":"1h"}`)
	if r.status != http.StatusCreated || a.job(r).State != queue.StateScheduled || a.job(r).ID != "mail-1" {
		t.Fatalf("enqueue delayed: %d %s", r.status, r.body)
	}
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	r = a.do("POST", "/v1/queues/jobs%3Aq/jobs", `{"payload":"x","id":"mail-2","processAt":"`+at.Format(time.RFC3339)+`"}`)
	if r.status != http.StatusCreated || a.job(r).State != queue.StateScheduled || !a.job(r).ProcessAt.Equal(at) {
		t.Fatalf("enqueue processAt: %d %s", r.status, r.body)
	}
	// The same id again: 200 with the existing job, nothing enqueued.
	r = a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":{"other":true},"id":"mail-1"}`)
	if r.status != http.StatusOK || a.job(r).ID != "mail-1" || string(a.job(r).Message.Payload) != `[1,2]` || r.header.Get("Location") != "/v1/queues/jobs:q/jobs/mail-1" {
		t.Fatalf("enqueue same id: %d %s", r.status, r.body)
	}
	// A unique lock: the second job with the same payload is refused, naming the first.
	r = a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":{"report":7},"uniqueFor":"1m"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("enqueue unique: %d %s", r.status, r.body)
	}
	first := a.job(r).ID
	if e := wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":{"report":7},"uniqueFor":"1m"}`), http.StatusConflict, "conflict"); !strings.Contains(e.Message, first) {
		t.Errorf("unique conflict does not name job %s: %q", first, e.Message)
	}
	if st, _ := a.admin.Stats(context.Background()); st.Pending != 2 || st.Scheduled != 2 {
		t.Errorf("stats after the enqueues: %+v", st)
	}

	// Bad requests name the member.
	for body, want := range map[string]string{
		`{"id":"x"}`:                                                    "payload",
		`{"payload":null}`:                                              "payload",
		`{"payload":1,"delay":"5x"}`:                                    "delay",
		`{"payload":1,"timeout":"-1s"}`:                                 "timeout",
		`{"payload":1,"uniqueFor":"soon"}`:                              "uniqueFor",
		`{"payload":1,"retention":"1d"}`:                                "retention",
		`{"payload":1,"retryDelays":["0s"]}`:                            "retry delays",
		`{"payload":1,"retryDelays":["x"]}`:                             "retryDelays",
		`{"payload":1,"maxRetries":-1}`:                                 "maxRetries",
		`{"payload":1,"processAt":"tomorrow"}`:                          "processAt",
		`{"payload":1,"delay":"1s","processAt":"2030-01-01T00:00:00Z"}`: "delay or processAt",
		`{"payload":1,"id":"a b"}`:                                      "job id",
		`{"payload":1,"priority":3}`:                                    "priority",
		`{"payload":1,"Delay":"1s"}`:                                    "delay",
		`[1]`:                                                           "JSON object",
	} {
		if e := wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs", body), http.StatusBadRequest, "invalid"); !strings.Contains(e.Message, want) {
			t.Errorf("%s: message %q does not name %q", body, e.Message, want)
		}
	}
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":"`+strings.Repeat("x", 5000)+`"}`), http.StatusRequestEntityTooLarge, "too_large")
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":1}`, "Content-Type: text/plain"), http.StatusUnsupportedMediaType, "unsupported_media_type")
	wantError(t, a.do("POST", "/v1/queues/other:q/jobs", `{"payload":1}`), http.StatusNotFound, "not_found")
	wantError(t, a.do("POST", "/v1/queues/bad%20name/jobs", `{"payload":1}`), http.StatusBadRequest, "invalid")

	// Inspect.
	if j := a.job(a.do("GET", "/v1/queues/jobs:q/jobs/mail-1", "")); j.State != queue.StateScheduled || j.ProcessAt.IsZero() || j.EnqueuedAt.IsZero() {
		t.Errorf("GET mail-1: %+v", j)
	}
	wantError(t, a.do("GET", "/v1/queues/jobs:q/jobs/nope", ""), http.StatusNotFound, "not_found")
	wantError(t, a.do("GET", "/v1/queues/jobs:q/jobs/a%20b", ""), http.StatusBadRequest, "invalid")
	wantError(t, a.do("GET", "/v1/queues/other:q/jobs/mail-1", ""), http.StatusNotFound, "not_found")

	// List by state, page by page.
	r = a.do("GET", "/v1/queues/jobs:q/jobs?state=scheduled&limit=1", "")
	p := decode[queue.JobPage](t, r)
	if r.status != http.StatusOK || p.Queue != jobsQueue || p.State != queue.StateScheduled || len(p.Jobs) != 1 || p.Jobs[0].ID != "mail-1" || p.Next == "" {
		t.Fatalf("list page 1: %d %s", r.status, r.body)
	}
	p = decode[queue.JobPage](t, a.do("GET", "/v1/queues/jobs:q/jobs?state=scheduled&limit=1&cursor="+p.Next, ""))
	if len(p.Jobs) != 1 || p.Jobs[0].ID != "mail-2" {
		t.Fatalf("list page 2: %+v", p)
	}
	if p.Next != "" {
		p = decode[queue.JobPage](t, a.do("GET", "/v1/queues/jobs:q/jobs?state=scheduled&limit=1&cursor="+p.Next, ""))
		if len(p.Jobs) != 0 || p.Next != "" {
			t.Fatalf("list past the end: %+v", p)
		}
	}
	if r := a.do("GET", "/v1/queues/jobs:q/jobs?state=done", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"jobs":[]`) {
		t.Errorf("list of none: %d %s", r.status, r.body)
	}
	for _, q := range []string{"", "?state=sleeping", "?state=pending&limit=0", "?state=pending&limit=1001", "?state=pending&cursor=x", "?state=pending&limt=5"} {
		wantError(t, a.do("GET", "/v1/queues/jobs:q/jobs"+q, ""), http.StatusBadRequest, "invalid")
	}
	wantError(t, a.do("GET", "/v1/queues/other:q/jobs?state=pending", ""), http.StatusNotFound, "not_found")

	// Cancel: a scheduled job is cancelled; again is the same answer; then it cannot be requeued.
	r = a.do("DELETE", "/v1/queues/jobs:q/jobs/mail-1", "")
	if r.status != http.StatusOK || a.job(r).State != queue.StateCancelled {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if r := a.do("DELETE", "/v1/queues/jobs:q/jobs/mail-1", ""); r.status != http.StatusOK || a.job(r).State != queue.StateCancelled {
		t.Fatalf("cancel again: %d %s", r.status, r.body)
	}
	wantError(t, a.do("DELETE", "/v1/queues/jobs:q/jobs/nope", ""), http.StatusNotFound, "not_found")
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs/mail-1/requeue", ""), http.StatusConflict, "conflict")
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs/nope/requeue", ""), http.StatusNotFound, "not_found")
	if st, _ := a.admin.Stats(context.Background()); st.Scheduled != 1 {
		t.Errorf("scheduled after the cancel: %+v", st)
	}

	// Pause and resume, seen in the stats.
	if r := a.do("POST", "/v1/queues/jobs:q/pause", ""); r.status != http.StatusOK || string(r.body) != `{"queue":"jobs:q","paused":true}` {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/v1/queues/jobs:q/stats", ""); !strings.Contains(string(r.body), `"paused":true`) {
		t.Errorf("stats while paused: %s", r.body)
	}
	// Enqueue still works while paused.
	if r := a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":2}`); r.status != http.StatusCreated {
		t.Errorf("enqueue while paused: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/queues/jobs:q/resume", ""); r.status != http.StatusOK || string(r.body) != `{"queue":"jobs:q","paused":false}` {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/v1/queues/jobs:q/stats", ""); !strings.Contains(string(r.body), `"paused":false`) {
		t.Errorf("stats after resume: %s", r.body)
	}
	wantError(t, a.do("POST", "/v1/queues/other:q/pause", ""), http.StatusNotFound, "not_found")
	wantError(t, a.do("POST", "/v1/queues/other:q/resume", ""), http.StatusNotFound, "not_found")
	wantError(t, a.do("GET", "/v1/queues/jobs:q/pause", ""), http.StatusMethodNotAllowed, "method_not_allowed")
}

// testJobLifecycle runs jobs through a worker and watches them over HTTP: attempts with their
// errors and a retained result, a running job asked to stop (202), a dead job requeued by id,
// and the 409 of cancelling a finished job.
func testJobLifecycle(t *testing.T, a *jobsAPI) {
	a.runJobsWorker(t)

	r := a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":{"kind":"flaky"},"id":"flaky-1","retryDelays":["10ms"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("enqueue flaky: %d %s", r.status, r.body)
	}
	done := a.await("flaky-1", queue.StateDone)
	if len(done.Attempts) != 2 || done.Attempts[0].Error != "first attempt fails" || done.Attempts[0].End.IsZero() ||
		done.Attempts[1].Error != "" || done.Attempts[1].Start.Before(done.Attempts[0].End) || string(done.Result) != `{"sent":3}` || done.FinishedAt.IsZero() {
		t.Errorf("done job: %+v", done)
	}
	wantError(t, a.do("DELETE", "/v1/queues/jobs:q/jobs/flaky-1", ""), http.StatusConflict, "conflict")
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs/flaky-1/requeue", ""), http.StatusConflict, "conflict")
	if p := decode[queue.JobPage](t, a.do("GET", "/v1/queues/jobs:q/jobs?state=done", "")); len(p.Jobs) != 1 || p.Jobs[0].ID != "flaky-1" {
		t.Errorf("done list: %+v", p)
	}

	// A running job: DELETE answers 202 with the job still active, and it ends cancelled.
	if r := a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":{"kind":"block"},"id":"block-1"}`); r.status != http.StatusCreated {
		t.Fatalf("enqueue block: %d %s", r.status, r.body)
	}
	a.await("block-1", queue.StateActive)
	r = a.do("DELETE", "/v1/queues/jobs:q/jobs/block-1", "")
	if r.status != http.StatusAccepted || a.job(r).State != queue.StateActive || !a.job(r).CancelRequested {
		t.Fatalf("cancel active: %d %s", r.status, r.body)
	}
	a.await("block-1", queue.StateCancelled)

	// A dead job, requeued by id while the queue is paused: pending, and it stays there.
	if r := a.do("POST", "/v1/queues/jobs:q/jobs", `{"payload":{"kind":"fail"},"id":"fail-1"}`); r.status != http.StatusCreated {
		t.Fatalf("enqueue fail: %d %s", r.status, r.body)
	}
	dead := a.await("fail-1", queue.StateDead)
	if len(dead.Attempts) != 1 || !strings.Contains(dead.Attempts[0].Error, "cannot do fail") {
		t.Errorf("dead job: %+v", dead)
	}
	if r := a.do("POST", "/v1/queues/jobs:q/pause", ""); r.status != http.StatusOK {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	r = a.do("POST", "/v1/queues/jobs:q/jobs/fail-1/requeue", "")
	if r.status != http.StatusOK || a.job(r).State != queue.StatePending {
		t.Fatalf("requeue dead: %d %s", r.status, r.body)
	}
	// A worker blocked in its dequeue may take the job and give it back (the pause): pending
	// or in flight, never dead, and its record stays pending.
	if st, _ := a.admin.Stats(context.Background()); st.Dead != 0 || st.Pending+st.Running != 1 {
		t.Errorf("stats after requeue: %+v", st)
	}
	if j := a.job(a.do("GET", "/v1/queues/jobs:q/jobs/fail-1", "")); j.State != queue.StatePending || len(j.Attempts) != 1 {
		t.Errorf("requeued job while paused: %+v", j)
	}
	wantError(t, a.do("POST", "/v1/queues/jobs:q/jobs/fail-1/requeue", ""), http.StatusConflict, "conflict")
	if r := a.do("POST", "/v1/queues/jobs:q/resume", ""); r.status != http.StatusOK {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	a.await("fail-1", queue.StateDead)
}
