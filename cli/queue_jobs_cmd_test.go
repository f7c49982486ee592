package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// checkAsAPI validates a --json output as the HTTP API's answer to method path with status:
// the CLI prints the same documents as the API.
func checkAsAPI(t *testing.T, method, path string, status int, out string) {
	t.Helper()
	header := http.Header{"Content-Type": {"application/json"}}
	if method == http.MethodPost && strings.HasSuffix(path, "/jobs") {
		header.Set("Location", path+"/x")
	}
	validateServeResponse(t, httptest.NewRequest(method, path, nil), status, header, []byte(strings.TrimSpace(out)))
}

// mustAdmin returns the admin of queue name in the test's namespace ("cli-") on srv.
func mustAdmin(t *testing.T, srv *redistest.Server, name string) *queue.Admin {
	t.Helper()
	b, err := redisqueue.New(srv.Client(t), redisqueue.Options{Namespace: "cli-"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := queue.NewAdmin(b, name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// jobOf decodes a job printed with --json.
func jobOf(t *testing.T, out string) queue.Job {
	t.Helper()
	var j queue.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("job output %q: %v", out, err)
	}
	return j
}

// TestQueueJobCommands: enqueue (inline, @file, options), inspect, list with a cursor, cancel,
// pause and resume on a real Redis; every --json output is the HTTP API's document (validated
// against openapi.json), and bad flags are refused with the flag named.
func TestQueueJobCommands(t *testing.T) {
	srv := redistest.StartStandalone(t)
	redisFlag := []string{"--redis", srv.URL, "--namespace", "cli-"}
	q := func(args ...string) (string, error) {
		return run(t, append(append([]string{"queue"}, args...), redisFlag...)...)
	}

	out, err := q("enqueue", "mail:q", "--payload", `{"to":"a@example.com"}`, "--id", "welcome-1", "--delay", "1h",
		"--max-retries", "2", "--retry-delays", "1s,5s", "--timeout", "30s", "--retention", "2h", "--json")
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	checkAsAPI(t, "POST", "/v1/queues/mail:q/jobs", http.StatusCreated, out)
	j := jobOf(t, out)
	if j.ID != "welcome-1" || j.State != queue.StateScheduled || j.Message.Job == nil || *j.Message.Job.MaxRetries != 2 ||
		len(j.Message.Job.RetryDelaysMs) != 2 || j.Message.Job.TimeoutMs != 30000 || !strings.Contains(out, `"attempts":[]`) {
		t.Errorf("enqueue --json: %s", out)
	}
	if out, err := q("enqueue", "mail:q", "--payload", `{"other":1}`, "--id", "welcome-1"); err != nil || !strings.Contains(out, "already exists") {
		t.Errorf("enqueue of the same id: %v %q", err, out)
	}
	file := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(file, []byte(`[1,2,3]`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = q("enqueue", "mail:q", "--payload", "@"+file, "--process-at", "2099-01-01T00:00:00Z", "--unique-for", "1m")
	if err != nil || !strings.Contains(out, "enqueued job ") || !strings.Contains(out, "(scheduled)") {
		t.Fatalf("enqueue @file: %v %q", err, out)
	}
	if _, err := q("enqueue", "mail:q", "--payload", "@"+file, "--unique-for", "1m"); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Errorf("unique enqueue again: %v", err)
	}
	if out, err := q("enqueue", "mail:q", "--payload", `"now"`, "--id", "now-1"); err != nil || !strings.Contains(out, "(pending)") {
		t.Errorf("enqueue pending: %v %q", err, out)
	}

	// Bad input names the flag; nothing is enqueued.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue", "mail:q"}, "--payload is required"},
		{[]string{"enqueue", "mail:q", "--payload", "{nope"}, "--payload must be JSON"},
		{[]string{"enqueue", "mail:q", "--payload", "@/no/such/file"}, "--payload @/no/such/file"},
		{[]string{"enqueue", "mail:q", "--payload", "1", "--delay", "5x"}, "--delay"},
		{[]string{"enqueue", "mail:q", "--payload", "1", "--delay", "1s", "--process-at", "2099-01-01T00:00:00Z"}, "--delay or --process-at"},
		{[]string{"enqueue", "mail:q", "--payload", "1", "--process-at", "tomorrow"}, "--process-at"},
		{[]string{"enqueue", "mail:q", "--payload", "1", "--max-retries", "-1"}, "maxRetries"},
		{[]string{"enqueue", "mail:q", "--payload", "1", "--id", "a b"}, "job id"},
		{[]string{"enqueue", "mail:q", "--payload", "1", "--dely", "1s"}, "did you mean --delay?"},
		{[]string{"list", "mail:q"}, "--state is required"},
		{[]string{"list", "mail:q", "--state", "sleeping"}, "--state is required"},
		{[]string{"list", "mail:q", "--state", "pending", "--limit", "0"}, "limit"},
		{[]string{"list", "mail:q", "--stat", "pending"}, "did you mean --state?"},
		{[]string{"inspect", "mail:q", "nope"}, "not_found"},
		{[]string{"inspect", "mail:q"}, "accepts 2 arg(s)"},
		{[]string{"pause"}, "accepts 1 arg(s)"},
	} {
		if _, err := q(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	if s, _ := mustAdmin(t, srv, "mail:q").Stats(t.Context()); s.Pending != 1 || s.Scheduled != 2 {
		t.Errorf("stats after the enqueues: %+v", s)
	}

	out, err = q("inspect", "mail:q", "welcome-1", "--json")
	if err != nil || jobOf(t, out).State != queue.StateScheduled {
		t.Fatalf("inspect --json: %v %s", err, out)
	}
	checkAsAPI(t, "GET", "/v1/queues/mail:q/jobs/welcome-1", http.StatusOK, out)
	if out, err := q("inspect", "mail:q", "welcome-1"); err != nil || !strings.Contains(out, "scheduled") || !strings.Contains(out, `{"to":"a@example.com"}`) || !strings.Contains(out, "no attempts yet") {
		t.Errorf("inspect: %v\n%s", err, out)
	}

	out, err = q("list", "mail:q", "--state", "scheduled", "--limit", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	checkAsAPI(t, "GET", "/v1/queues/mail:q/jobs?state=scheduled&limit=1", http.StatusOK, out)
	var page queue.JobPage
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != "welcome-1" || page.Next == "" {
		t.Fatalf("list page 1: %v %s", err, out)
	}
	out, err = q("list", "mail:q", "--state", "scheduled", "--limit", "1", "--cursor", page.Next)
	if err != nil || strings.Contains(out, "welcome-1") || !strings.Contains(out, "ID") || strings.Count(out, "\n") < 2 {
		t.Errorf("list page 2: %v\n%s", err, out)
	}
	if out, err := q("list", "mail:q", "--state", "scheduled", "--limit", "1"); err != nil || !strings.Contains(out, "more: --cursor "+page.Next) {
		t.Errorf("list (table) does not print the next cursor: %v\n%s", err, out)
	}

	out, err = q("cancel", "mail:q", "welcome-1", "--json")
	if err != nil || jobOf(t, out).State != queue.StateCancelled {
		t.Fatalf("cancel: %v %s", err, out)
	}
	checkAsAPI(t, "DELETE", "/v1/queues/mail:q/jobs/welcome-1", http.StatusOK, out)
	if _, err := q("cancel", "mail:q", "welcome-1"); err == nil || !strings.Contains(err.Error(), "cancelled already") {
		t.Errorf("cancel again: %v", err)
	}
	if _, err := q("requeue-job", "mail:q", "welcome-1"); err == nil || !strings.Contains(err.Error(), "not dead") {
		t.Errorf("requeue-job of a cancelled job: %v", err)
	}
	if out, err := q("cancel", "mail:q", "now-1"); err != nil || !strings.Contains(out, "cancelled job now-1") {
		t.Errorf("cancel (text): %v %q", err, out)
	}

	out, err = q("pause", "mail:q", "--json")
	if err != nil || strings.TrimSpace(out) != `{"queue":"mail:q","paused":true}` {
		t.Fatalf("pause: %v %s", err, out)
	}
	checkAsAPI(t, "POST", "/v1/queues/mail:q/pause", http.StatusOK, out)
	out, err = run(t, append([]string{"queue", "stats", "--queue", "mail:q", "--json"}, redisFlag...)...)
	if err != nil || !strings.Contains(out, `"paused":true`) || !strings.Contains(out, `"scheduled":1`) {
		t.Errorf("stats while paused: %v %s", err, out)
	}
	checkAsAPI(t, "GET", "/v1/queues/mail:q/stats", http.StatusOK, out)
	if out, err := q("resume", "mail:q"); err != nil || !strings.Contains(out, "mail:q resumed") {
		t.Errorf("resume: %v %q", err, out)
	}
	if p, _ := mustAdmin(t, srv, "mail:q").Paused(t.Context()); p {
		t.Error("still paused after resume")
	}
}

// TestServe_JobRoutes: serve wires the job routes to its configured queues (the queue block's
// producers and admins): a job enqueued over HTTP on a configured queue can be read back, a
// queue that is not configured is 404, and pause shows in the stats.
func TestServe_JobRoutes(t *testing.T) {
	cfg := writeConfig(t, `
queue:
  queues:
    - name: report:queue
    - name: mail:queue
      handler: external
`)
	base, _, _, _ := startServe(t, "--config", cfg)
	status, body := request(t, http.MethodPost, base+"/v1/queues/mail:queue/jobs", `{"payload":{"to":"a@example.com"},"id":"welcome-1","delay":"1h"}`)
	if status != http.StatusCreated || !strings.Contains(body, `"state":"scheduled"`) {
		t.Fatalf("enqueue: %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/queues/mail:queue/jobs", `{"payload":1,"id":"welcome-1"}`); status != http.StatusOK || !strings.Contains(body, `"to":"a@example.com"`) {
		t.Errorf("enqueue the same id: %d %s", status, body)
	}
	if status, body := request(t, http.MethodGet, base+"/v1/queues/mail:queue/jobs/welcome-1", ""); status != http.StatusOK || !strings.Contains(body, `"id":"welcome-1"`) {
		t.Errorf("get: %d %s", status, body)
	}
	if status, body := request(t, http.MethodGet, base+"/v1/queues/mail:queue/jobs?state=scheduled", ""); status != http.StatusOK || !strings.Contains(body, `"id":"welcome-1"`) {
		t.Errorf("list: %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/queues/nope:queue/jobs", `{"payload":1}`); status != http.StatusNotFound {
		t.Errorf("enqueue on an unconfigured queue: %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/queues/mail:queue/pause", ""); status != http.StatusOK {
		t.Fatalf("pause: %d %s", status, body)
	}
	if status, body := request(t, http.MethodGet, base+"/v1/queues/mail:queue/stats", ""); status != http.StatusOK || !strings.Contains(body, `"paused":true`) || !strings.Contains(body, `"scheduled":1`) {
		t.Errorf("stats: %d %s", status, body)
	}
	if status, body := request(t, http.MethodDelete, base+"/v1/queues/mail:queue/jobs/welcome-1", ""); status != http.StatusOK || !strings.Contains(body, `"state":"cancelled"`) {
		t.Errorf("cancel: %d %s", status, body)
	}
}

// TestQueueStats_ShowsThePool: `redstate queue stats` shows the pool of queue.pools serving the
// queue (table and --json, the latter as GET /v1/queues/{queue}/stats answers), and "-" for a
// queue in no pool.
func TestQueueStats_ShowsThePool(t *testing.T) {
	srv := redistest.StartStandalone(t)
	t.Setenv("REDSTATE_QUEUE_QUEUES", `[{name: report:queue}, {name: mail:q, handler: webhook, webhook: {url: "http://127.0.0.1:1/"}}, {name: other, handler: external}]`)
	t.Setenv("REDSTATE_QUEUE_POOLS", `[{name: main, strict: true, concurrency: 4, queues: [{name: mail:q, weight: 1}, {name: report:queue, weight: 2}]}]`)
	redisFlag := []string{"--redis", srv.URL, "--namespace", "cli-"}
	out, err := run(t, append([]string{"queue", "stats", "--queue", "mail:q", "--json"}, redisFlag...)...)
	if err != nil || !strings.Contains(out, `"pool":{"pool":"main","strict":true,"concurrency":4,"weight":1,"queues":["report:queue","mail:q"]}`) {
		t.Fatalf("stats --json: %v %s", err, out)
	}
	checkAsAPI(t, "GET", "/v1/queues/mail:q/stats", http.StatusOK, out)
	out, err = run(t, append([]string{"queue", "stats", "--queue", "mail:q"}, redisFlag...)...)
	if err != nil || !strings.Contains(out, "POOL") || !strings.Contains(out, "main: strict, priority 1, 4 handlers") {
		t.Fatalf("stats: %v %s", err, out)
	}
	out, err = run(t, append([]string{"queue", "stats", "--queue", "other", "--json"}, redisFlag...)...)
	if err != nil || strings.Contains(out, `"pool"`) {
		t.Fatalf("stats --json of a queue in no pool: %v %s", err, out)
	}
}
