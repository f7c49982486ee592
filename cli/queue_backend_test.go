package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// writeConfig writes a YAML configuration file for serve.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServe_ReportFlowEndToEnd(t *testing.T) {
	cfg := writeConfig(t, "report:\n  delay: 10ms\n")
	base, logs, stop, done := startServe(t, "--config", cfg)

	if !strings.Contains(logs.String(), `"msg":"queue worker started"`) || !strings.Contains(logs.String(), `"queue":"report:queue"`) {
		t.Errorf("no queue start log:\n%s", logs)
	}
	status, body := request(t, http.MethodPost, base+"/api/assessment/submit", `{"recordId": 12345, "answers": {"a": [1, 2], "b": 3}}`)
	if status != http.StatusAccepted || !strings.Contains(body, `"statusText":"生成中"`) {
		t.Fatalf("submit = %d %s", status, body)
	}
	var st struct {
		Status     int             `json:"status"`
		StatusText string          `json:"statusText"`
		Result     json.RawMessage `json:"result"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body = request(t, http.MethodGet, base+"/api/assessment/12345/result", "")
		if status != http.StatusOK {
			t.Fatalf("result = %d %s", status, body)
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		if st.Status == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("record still %d after 10s: %s\nlogs:\n%s", st.Status, body, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.StatusText != "已完成" || !strings.Contains(string(st.Result), `"score":6`) {
		t.Errorf("result = %s", body)
	}

	status, body = request(t, http.MethodPost, base+"/api/admin/assessmentRecord/regenerateReport", `{"id": 12345}`)
	if status != http.StatusConflict || !strings.Contains(body, `"businessCode":2005`) {
		t.Errorf("regenerate done record = %d %s", status, body)
	}
	status, body = request(t, http.MethodGet, base+"/v1/queues/report:queue/stats", "")
	if status != http.StatusOK || !strings.Contains(body, `"pending":0`) {
		t.Errorf("stats = %d %s", status, body)
	}
	status, body = request(t, http.MethodGet, base+"/metrics", "")
	if status != http.StatusOK || !strings.Contains(body, `redstate_queue_jobs_total{outcome="acked",queue="report:queue"} 1`) ||
		!strings.Contains(body, `redstate_queue_depth{place="pending",queue="report:queue"} 0`) {
		t.Errorf("metrics lack queue series:\n%s", body)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not stop\nlogs:\n%s", logs)
	}
	if !strings.Contains(logs.String(), `"msg":"queue worker stopped"`) {
		t.Errorf("worker did not stop gracefully:\n%s", logs)
	}
}

func TestServe_WebhookQueueAndShutdownWaitsForRunningJob(t *testing.T) {
	cfg := writeConfig(t, `
server:
  shutdown-timeout: 5s
queue:
  queues:
    - name: report:queue
    - name: mail:queue
      handler: webhook
      webhook: {url: "http://127.0.0.1:1/jobs", timeout: 1s}
report:
  delay: 700ms
`)
	base, logs, stop, done := startServe(t, "--config", cfg, "--log-level", "debug")
	if !strings.Contains(logs.String(), `"queue":"mail:queue"`) || !strings.Contains(logs.String(), `"handler":"webhook"`) {
		t.Errorf("no webhook queue start log:\n%s", logs)
	}
	if status, body := request(t, http.MethodGet, base+"/v1/queues/mail%3Aqueue/stats", ""); status != http.StatusOK {
		t.Errorf("mail stats = %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/api/assessment/submit", `{"recordId": 7, "answers": [1]}`); status != http.StatusAccepted {
		t.Fatalf("submit = %d %s", status, body)
	}
	// Wait until the handler has started the job, then stop: the running job must finish
	// before serve returns. (The "running" stat is not enough: it counts jobs dequeued into the
	// worker's prefetch buffer too, and a job no handler started is released on shutdown.)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `"msg":"generating report"`) {
		if time.Now().After(deadline) {
			t.Fatalf("job never ran:\n%s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(logs.String(), `"msg":"queue job done"`) || !strings.Contains(logs.String(), `"recordId":7`) {
		t.Errorf("running job did not finish during graceful shutdown:\n%s", logs)
	}
}

func TestServe_ReportFlowOnRedis(t *testing.T) {
	srv := redistest.StartStandalone(t)
	cfg := writeConfig(t, "report:\n  delay: 10ms\n")
	base, logs, stop, done := startServe(t, "--config", cfg, "--redis", srv.URL, "--namespace", "e2e-")
	if !strings.Contains(logs.String(), `"msg":"job queues on redis"`) {
		t.Errorf("queues not on redis:\n%s", logs)
	}
	if status, body := request(t, http.MethodPost, base+"/api/assessment/submit", `{"recordId": 42, "answers": {"q": 5}}`); status != http.StatusAccepted {
		t.Fatalf("submit = %d %s", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := request(t, http.MethodGet, base+"/api/assessment/42/result", "")
		if strings.Contains(body, `"status":4`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done: %s\nlogs:\n%s", body, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The seed's key names, under the namespace: a legacy LPUSH lands where consumers listen.
	c := srv.Client(t)
	if err := c.LPush(t.Context(), "e2e-report:queue", `{"RecordId":42,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`).Err(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, body := request(t, http.MethodGet, base+"/v1/queues/report:queue/stats", "")
		if strings.Contains(body, `"pending":0`) && strings.Contains(body, `"running":0`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("legacy message not consumed: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
}

// TestServe_ReportFlowWithWebhookGenerator: with report:queue handled by a webhook, the report
// routes still work, and the generator behind the webhook reports the result over HTTP.
func TestServe_ReportFlowWithWebhookGenerator(t *testing.T) {
	jobs := make(chan int64, 4)
	gen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var job struct {
			RecordID int64 `json:"recordId"`
		}
		if err := json.NewDecoder(r.Body).Decode(&job); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		jobs <- job.RecordID
	}))
	t.Cleanup(gen.Close)
	cfg := writeConfig(t, `
queue:
  queues:
    - name: report:queue
      handler: webhook
      webhook: {url: "`+gen.URL+`/generate"}
`)
	base, logs, _, _ := startServe(t, "--config", cfg)
	if status, body := request(t, http.MethodPost, base+"/api/assessment/submit", `{"recordId": 77, "answers": {"q": 5}}`); status != http.StatusAccepted {
		t.Fatalf("submit with a webhook generator = %d %s", status, body)
	}
	select {
	case id := <-jobs:
		if id != 77 {
			t.Fatalf("webhook got record %d", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("webhook never called\nlogs:\n%s", logs)
	}
	if _, body := request(t, http.MethodGet, base+"/api/assessment/77/result", ""); !strings.Contains(body, `"status":3`) {
		t.Fatalf("before the result: %s", body)
	}
	status, body := request(t, http.MethodPost, base+"/api/assessment/77/result", `{"result": {"score": 5, "level": "B"}}`)
	if status != http.StatusOK || !strings.Contains(body, `"status":4`) || !strings.Contains(body, `"score":5`) {
		t.Fatalf("report result = %d %s", status, body)
	}
	if _, body := request(t, http.MethodGet, base+"/api/assessment/77/result", ""); !strings.Contains(body, `"statusText":"已完成"`) || !strings.Contains(body, `"level":"B"`) {
		t.Fatalf("after the result: %s", body)
	}
	status, body = request(t, http.MethodPost, base+"/api/assessment/77/result", `{"result": {"score": 1}}`)
	if status != http.StatusConflict || !strings.Contains(body, `"businessCode":2005`) {
		t.Errorf("second result = %d %s, want 409 2005", status, body)
	}
	status, body = request(t, http.MethodPost, base+"/api/admin/assessmentRecord/regenerateReport", `{"id": 77}`)
	if status != http.StatusConflict {
		t.Errorf("regenerate a done record = %d %s", status, body)
	}
}

// TestServe_ReportFlowWithExternalConsumer: handler external runs no worker; the job waits in
// Redis-compatible form for the outside consumer, which reports a failure, after which an
// admin regenerates the report and the consumer reports the result.
func TestServe_ReportFlowWithExternalConsumer(t *testing.T) {
	cfg := writeConfig(t, "queue:\n  queues:\n    - name: report:queue\n      handler: external\n")
	base, logs, _, _ := startServe(t, "--config", cfg)
	if strings.Contains(logs.String(), `"msg":"queue worker started"`) || !strings.Contains(logs.String(), "handler external") {
		t.Errorf("external queue must start no worker:\n%s", logs)
	}
	if status, body := request(t, http.MethodPost, base+"/api/assessment/submit", `{"recordId": 5, "answers": [1, 2]}`); status != http.StatusAccepted {
		t.Fatalf("submit = %d %s", status, body)
	}
	if _, body := request(t, http.MethodGet, base+"/v1/queues/report:queue/stats", ""); !strings.Contains(body, `"pending":1`) {
		t.Fatalf("the job must wait for the external consumer: %s", body)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/assessment/5/failure", `{"reason": ""}`},
		{"/api/assessment/5/result", `{"result": null}`},
		{"/api/assessment/5/result", `{}`},
		{"/api/assessment/x/result", `{"result": 1}`},
	} {
		if status, body := request(t, http.MethodPost, base+c.path, c.body); status != http.StatusBadRequest {
			t.Errorf("POST %s %s = %d %s, want 400", c.path, c.body, status, body)
		}
	}
	if status, body := request(t, http.MethodPost, base+"/api/assessment/999/result", `{"result": 1}`); status != http.StatusNotFound || !strings.Contains(body, `"businessCode":3241`) {
		t.Errorf("unknown record = %d %s, want 404 3241", status, body)
	}
	status, body := request(t, http.MethodPost, base+"/api/assessment/5/failure", `{"reason": "scoring service timed out"}`)
	if status != http.StatusOK || !strings.Contains(body, `"status":5`) || !strings.Contains(body, "报告生成失败,请联系客服") {
		t.Fatalf("failure = %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/api/admin/assessmentRecord/regenerateReport", `{"id": 5}`); status != http.StatusOK {
		t.Fatalf("regenerate = %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/api/assessment/5/result", `{"result": {"ok": true}}`); status != http.StatusOK || !strings.Contains(body, `"status":4`) {
		t.Fatalf("result after regenerate = %d %s", status, body)
	}
	if _, body := request(t, http.MethodGet, base+"/v1/queues/report:queue/stats", ""); !strings.Contains(body, `"pending":2`) {
		t.Errorf("both jobs (submit, regenerate) wait for the external consumer: %s", body)
	}
}

// TestServe_SubmitDuringRedisOutageWithSQLRecords: an accepted submit is never lost, with records
// in SQL (the default record store; docs/report.md): while Redis is down a submit still succeeds
// with status 3 and the status reads from SQL; when Redis returns the reconciler enqueues the
// record (it was nudged, so well before queue.reconciler.age) and the report reaches status 4.
func TestServe_SubmitDuringRedisOutageWithSQLRecords(t *testing.T) {
	srv := redistest.StartStandalone(t)
	cfg := writeConfig(t, `
report:
  delay: 10ms
queue:
  queues:
    - name: report:queue
      error-delay: 200ms
      block-timeout: 1s
`)
	base, logs, _, _ := startServe(t, "--config", cfg, "--redis", srv.URL)
	if !strings.Contains(logs.String(), `"msg":"job records in sql"`) {
		t.Fatalf("records not in sql:\n%s", logs)
	}
	srv.Stop(t)
	status, body := request(t, http.MethodPost, base+"/api/assessment/submit", `{"recordId": 31, "answers": {"q": 4}}`)
	if status != http.StatusAccepted || !strings.Contains(body, `"status":3`) {
		t.Fatalf("submit with Redis down = %d %s, want 202 status 3", status, body)
	}
	if status, body := request(t, http.MethodGet, base+"/api/assessment/31/result", ""); status != http.StatusOK || !strings.Contains(body, `"status":3`) {
		t.Fatalf("result with Redis down = %d %s", status, body)
	}
	srv.Restart(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := request(t, http.MethodGet, base+"/api/assessment/31/result", "")
		if strings.Contains(body, `"status":4`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("record never generated after Redis returned: %s\nlogs:\n%s", body, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "queue reconciler re-enqueued a stranded record") {
		t.Errorf("the reconciler did not enqueue the record:\n%s", logs)
	}
}

// TestServe_SQLRecordsOnServers runs the report flow with its records in a real PostgreSQL
// and in a real MariaDB (mysql://).
func TestServe_SQLRecordsOnServers(t *testing.T) {
	for engine, dsn := range map[string]func(testing.TB) string{"postgres": sqltest.PostgresDSN, "mysql": sqltest.MariaDBDSN} {
		t.Run(engine, func(t *testing.T) { testSQLRecords(t, engine, dsn(t)) })
	}
}

func testSQLRecords(t *testing.T, engine, dsn string) {
	cfg := writeConfig(t, "report:\n  delay: 10ms\n")
	base, logs, _, _ := startServe(t, "--config", cfg, "--database", dsn)
	if !strings.Contains(logs.String(), `"engine":"`+engine+`"`) {
		t.Fatalf("records not on %s:\n%s", engine, logs)
	}
	if status, body := request(t, http.MethodPost, base+"/api/assessment/submit", `{"recordId": 8, "answers": [1, 2]}`); status != http.StatusAccepted {
		t.Fatalf("submit = %d %s", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := request(t, http.MethodGet, base+"/api/assessment/8/result", "")
		if strings.Contains(body, `"status":4`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not generated: %s\nlogs:\n%s", body, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServe_FirstSubmitAfterRedisRestart: with records in Redis, the first submits after Redis
// was killed and restarted succeed (pooled connections to the old process are not used, and a
// store call failing on one is retried once).
func TestServe_FirstSubmitAfterRedisRestart(t *testing.T) {
	srv := redistest.StartStandalone(t)
	cfg := writeConfig(t, "report:\n  delay: 10ms\nqueue:\n  record-store: redis\n  queues:\n    - name: report:queue\n      concurrency: 4\n")
	base, _, _, _ := startServe(t, "--config", cfg, "--redis", srv.URL)
	for id := 1; id <= 8; id++ { // fill the pool
		if status, body := request(t, http.MethodPost, base+"/api/assessment/submit", fmt.Sprintf(`{"recordId": %d, "answers": [1]}`, id)); status != http.StatusAccepted {
			t.Fatalf("submit = %d %s", status, body)
		}
	}
	srv.Kill(t)
	srv.Restart(t)
	for id := 100; id < 104; id++ {
		if status, body := request(t, http.MethodPost, base+"/api/assessment/submit", fmt.Sprintf(`{"recordId": %d, "answers": [1]}`, id)); status != http.StatusAccepted {
			t.Fatalf("submit %d after the Redis restart = %d %s", id, status, body)
		}
	}
}
