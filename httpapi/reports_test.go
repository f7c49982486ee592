package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
)

// reportAPI is an API with the report flow on memqueue.
type reportAPI struct {
	*testAPI
	broker  *memqueue.Broker
	records *memrecords.Store
	svc     *report.Service
}

func newReportAPI(t *testing.T, withTokens bool) *reportAPI {
	t.Helper()
	ra := &reportAPI{
		broker:  memqueue.NewBroker(memqueue.Options{}),
		records: memrecords.New(memrecords.Options{}),
	}
	svc, err := report.NewService(ra.broker, ra.records, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ra.svc = svc
	ra.testAPI = newTestAPI(t, func(c *Config, d *Deps) {
		d.Reports = svc
		d.Queues = func(name string) *queue.Admin {
			if name == svc.Queue() {
				return svc.Admin()
			}
			return nil
		}
		if withTokens {
			c.Tokens = []config.Token{
				{Name: "reader", Token: "r-secret", Roles: []string{"read"}},
				{Name: "writer", Token: "w-secret", Roles: []string{"write"}},
				{Name: "boss", Token: "a-secret", Roles: []string{"admin"}},
			}
		}
	})
	return ra
}

// runWorker consumes the report queue with the built-in generator until the test ends.
func (ra *reportAPI) runWorker(t *testing.T) {
	t.Helper()
	g := &report.Generator{Records: ra.records, Delay: 5 * time.Millisecond}
	w, err := queue.NewWorker(ra.broker, g.Handler(), queue.WorkerSettings{
		Queue: report.DefaultQueue, Check: report.CheckJob, OnDead: report.MarkFailed(ra.records),
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

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	return v
}

func TestReports_SubmitThenResult(t *testing.T) {
	ra := newReportAPI(t, false)
	ra.runWorker(t)

	r := ra.do("POST", "/api/assessment/submit", `{"recordId": 12345, "answers": {"openness": [4, 5], "grit": 3}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	sub := decode[map[string]any](t, r)
	if sub["id"] != float64(12345) || sub["status"] != float64(3) || sub["statusText"] != "生成中" {
		t.Errorf("submit body: %s", r.body)
	}

	var st report.Status
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = ra.do("GET", "/api/assessment/12345/result", "")
		if r.status != 200 {
			t.Fatalf("result: %d %s", r.status, r.body)
		}
		st = decode[report.Status](t, r)
		if st.Status == report.StatusDone || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st.Status != 4 || st.StatusText != "已完成" || len(st.Result) == 0 {
		t.Fatalf("result: %s", r.body)
	}
	rep := decode[report.Report](t, response{body: st.Result})
	if rep.RecordID != 12345 || rep.Score != 12 || rep.AnswerCount != 3 {
		t.Errorf("report: %+v", rep)
	}

	// Done records cannot be regenerated: 409 with business code 2005.
	e := wantError(t, ra.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": 12345}`), http.StatusConflict, "conflict")
	if e.BusinessCode != 2005 || e.Message != "当前状态不允许重新生成" {
		t.Errorf("regenerate done: %+v", e)
	}
}

func TestReports_ResultTextsAndErrors(t *testing.T) {
	ra := newReportAPI(t, false)
	ctx := context.Background()
	if _, err := ra.records.Submit(ctx, 5, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := ra.records.SetFailed(ctx, 5, "boom"); err != nil {
		t.Fatal(err)
	}
	st := decode[report.Status](t, ra.do("GET", "/api/assessment/5/result", ""))
	if st.Status != 5 || st.StatusText != "生成失败" || st.ResultText != "报告生成失败,请联系客服" {
		t.Errorf("failed: %+v", st)
	}
	e := wantError(t, ra.do("GET", "/api/assessment/6/result", ""), 404, "not_found")
	if e.BusinessCode != 3241 || e.Message != "测评记录不存在" {
		t.Errorf("unknown: %+v", e)
	}
	wantError(t, ra.do("GET", "/api/assessment/abc/result", ""), 400, "invalid")
	wantError(t, ra.do("POST", "/api/assessment/submit", `{"recordId": 0, "answers": {}}`), 400, "invalid")
	wantError(t, ra.do("POST", "/api/assessment/submit", `{"recordId": 1}`), 400, "invalid")
	wantError(t, ra.do("POST", "/api/assessment/submit", `{"recordId": 1, "answers": {}, "x": 1}`), 400, "invalid")
}

func TestReports_Regenerate(t *testing.T) {
	ra := newReportAPI(t, false)
	ctx := context.Background()
	for id, status := range map[int64]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5} {
		if _, err := ra.records.Create(ctx, id, status, json.RawMessage(`{"q":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	r := ra.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": 5}`)
	if r.status != 200 || string(r.body) != "{}" {
		t.Fatalf("regenerate 5: %d %s", r.status, r.body)
	}
	if rec, _ := ra.records.Get(ctx, 5); rec.Status != 3 {
		t.Errorf("status after regenerate: %d", rec.Status)
	}
	e := wantError(t, ra.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": 99}`), 404, "not_found")
	if e.BusinessCode != 3241 {
		t.Errorf("unknown: %+v", e)
	}
	e = wantError(t, ra.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": 2}`), 409, "conflict")
	if e.BusinessCode != 2005 {
		t.Errorf("status 2: %+v", e)
	}
	for _, body := range []string{`{"ids": []}`, `{}`} {
		e = wantError(t, ra.do("POST", "/api/admin/assessmentRecord/batchRegenerateReport", body), 400, "invalid")
		if e.BusinessCode != 1001 || e.Message != "记录ID列表不能为空" {
			t.Errorf("empty batch %s: %+v", body, e)
		}
	}
	r = ra.do("POST", "/api/admin/assessmentRecord/batchRegenerateReport", `{"ids": [1, 2, 3, 4, 5, 99, 3]}`)
	if r.status != 200 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	res := decode[map[string]int](t, r)
	if res["SuccessCount"] != 2 || res["SkippedCount"] != 5 || res["SuccessCount"]+res["SkippedCount"] != 7 {
		t.Errorf("batch: %s", r.body)
	}
	// Errors without a business code carry none.
	if e := wantError(t, ra.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": "x"}`), 400, "invalid"); e.BusinessCode != 0 {
		t.Errorf("plain error has businessCode %d", e.BusinessCode)
	}
}

func TestReports_Roles(t *testing.T) {
	ra := newReportAPI(t, true)
	submit := `{"recordId": 1, "answers": {"q": 1}}`
	ra.token = "r-secret"
	wantError(t, ra.do("POST", "/api/assessment/submit", submit), 403, "forbidden")
	ra.token = "w-secret"
	if r := ra.do("POST", "/api/assessment/submit", submit); r.status != 202 {
		t.Fatalf("writer submit: %d %s", r.status, r.body)
	}
	wantError(t, ra.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": 1}`), 403, "forbidden")
	wantError(t, ra.do("POST", "/api/admin/assessmentRecord/batchRegenerateReport", `{"ids": [1]}`), 403, "forbidden")
	wantError(t, ra.do("GET", "/v1/queues/report:queue/stats", ""), 403, "forbidden")
	ra.token = "r-secret"
	if r := ra.do("GET", "/api/assessment/1/result", ""); r.status != 200 {
		t.Errorf("reader result: %d", r.status)
	}
	ra.token = ""
	wantError(t, ra.do("GET", "/api/assessment/1/result", ""), 401, "unauthorized")
	ra.token = "a-secret"
	if r := ra.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": 1}`); r.status != 200 {
		t.Errorf("admin regenerate: %d %s", r.status, r.body)
	}
}

func TestReports_NotWired(t *testing.T) {
	a := newTestAPI(t, nil)
	wantError(t, a.do("POST", "/api/assessment/submit", `{"recordId": 1, "answers": {}}`), 404, "not_found")
	wantError(t, a.do("GET", "/api/assessment/1/result", ""), 404, "not_found")
	wantError(t, a.do("POST", "/api/admin/assessmentRecord/regenerateReport", `{"id": 1}`), 404, "not_found")
	wantError(t, a.do("GET", "/v1/queues/report:queue/stats", ""), 404, "not_found")
}

// TestSubmit_FinishedReportCannotBeOverwritten: a write token re-submitting answers for a
// record past status 2 gets 409 with business code 2005 and the stored report stays (only the
// admin-only regenerate may reset a report).
func TestSubmit_FinishedReportCannotBeOverwritten(t *testing.T) {
	ra := newReportAPI(t, false)
	if _, err := ra.records.Create(t.Context(), 77, report.StatusPending, nil); err != nil {
		t.Fatal(err)
	}
	if r := ra.do("POST", "/api/assessment/submit", `{"recordId": 77, "answers": {"q": 1}}`); r.status != http.StatusAccepted {
		t.Fatalf("first submit: %d %s", r.status, r.body)
	}
	if _, err := ra.records.SetResult(t.Context(), 77, json.RawMessage(`{"score":1}`)); err != nil {
		t.Fatal(err)
	}
	e := wantError(t, ra.do("POST", "/api/assessment/submit", `{"recordId": 77, "answers": {"q": 2}}`), http.StatusConflict, "conflict")
	if e.BusinessCode != report.CodeInvalidOperation {
		t.Fatalf("businessCode = %d, want 2005", e.BusinessCode)
	}
	if rec, _ := ra.records.Get(t.Context(), 77); rec.Status != report.StatusDone || string(rec.Result) != `{"score":1}` {
		t.Fatalf("record after a refused submit: %+v", rec)
	}
}
