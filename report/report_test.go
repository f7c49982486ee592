package report_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
)

// failingBroker fails every Enqueue with EUNAVAILABLE (Redis down at submit time).
type failingBroker struct{ queue.Broker }

func (failingBroker) Enqueue(context.Context, string, queue.Message) error {
	return redstate.Errorf(redstate.EUNAVAILABLE, "redis down")
}

func newFlow(t *testing.T) (*report.Service, *memqueue.Broker, *memrecords.Store) {
	t.Helper()
	b := memqueue.NewBroker(memqueue.Options{})
	rs := memrecords.New(memrecords.Options{})
	svc, err := report.NewService(b, rs, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return svc, b, rs
}

// runWorker runs a worker with the built-in generator until the test ends.
func runWorker(t *testing.T, b queue.Broker, rs report.RecordStore, g *report.Generator) {
	t.Helper()
	w, err := queue.NewWorker(b, g.Handler(), queue.WorkerSettings{
		Queue: report.DefaultQueue, Check: report.CheckJob, OnDead: report.MarkFailed(rs),
		BlockTimeout: 50 * time.Millisecond, PromoteInterval: 10 * time.Millisecond,
		RetryDelays: []time.Duration{time.Millisecond}, ShutdownTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitStatus(t *testing.T, svc *report.Service, id int64, want int) *report.Status {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := svc.Status(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %d: status %d, want %d", id, st.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSubmit_GeneratesReport(t *testing.T) {
	svc, b, rs := newFlow(t)
	var mu sync.Mutex
	runs := map[int64]int{}
	runWorker(t, b, rs, &report.Generator{Records: rs, Delay: 5 * time.Millisecond, OnRun: func(id int64, _ int) {
		mu.Lock()
		runs[id]++
		mu.Unlock()
	}})

	rec, err := svc.Submit(context.Background(), 7, json.RawMessage(`{"openness":[4,5,3],"grit":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != report.StatusGenerating || rec.StatusText != "生成中" {
		t.Errorf("after submit: %+v", rec)
	}
	st := waitStatus(t, svc, 7, report.StatusDone)
	if st.StatusText != "已完成" || st.ResultText != "已完成" {
		t.Errorf("done: %+v", st)
	}
	var rep report.Report
	if err := json.Unmarshal(st.Result, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.RecordID != 7 || rep.AnswerCount != 4 || rep.Score != 14 || rep.Attempt != 0 || rep.JobID == "" || rep.GeneratedAt.IsZero() {
		t.Errorf("report: %+v", rep)
	}
	if d := rep.Dimensions["openness"]; d.Count != 3 || d.Average != 4 {
		t.Errorf("openness: %+v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs[7] != 1 {
		t.Errorf("runs = %d", runs[7])
	}
}

func TestSubmit_EnqueueFailureStillSucceeds(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	rs := memrecords.New(memrecords.Options{})
	svc, err := report.NewService(failingBroker{b}, rs, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := svc.Submit(context.Background(), 9, json.RawMessage(`{"q":1}`))
	if err != nil || rec.Status != report.StatusGenerating {
		t.Fatalf("submit with Redis down: %+v, %v", rec, err)
	}
	if s, _ := b.Stats(context.Background(), report.DefaultQueue); s.Pending != 0 {
		t.Errorf("pending = %d", s.Pending)
	}
	// The reconciler picks the stranded record up.
	rc, err := report.NewReconciler(b, rs, report.ReconcilerSettings{Age: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if n, err := rc.ReconcileOnce(context.Background()); err != nil || n != 1 {
		t.Errorf("reconcile: %d, %v", n, err)
	}
}

func TestSubmit_Validation(t *testing.T) {
	svc, _, _ := newFlow(t)
	for _, tc := range []struct {
		id      int64
		answers string
	}{{0, `{}`}, {-1, `{}`}, {1, ``}, {1, `null`}, {1, `{`}} {
		if _, err := svc.Submit(context.Background(), tc.id, json.RawMessage(tc.answers)); redstate.ErrorCode(err) != redstate.EINVALID {
			t.Errorf("Submit(%d, %q) = %v, want invalid", tc.id, tc.answers, err)
		}
	}
}

func TestStatus_TextsAndUnknown(t *testing.T) {
	svc, _, rs := newFlow(t)
	ctx := context.Background()
	if _, err := svc.Status(ctx, 404); report.BusinessCode(err) != report.CodeRecordNotFound || redstate.ErrorCode(err) != redstate.ENOTFOUND {
		t.Errorf("unknown: %v", err)
	}
	if _, err := rs.Submit(ctx, 5, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.SetFailed(ctx, 5, "boom"); err != nil {
		t.Fatal(err)
	}
	st, err := svc.Status(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != 5 || st.StatusText != "生成失败" || st.ResultText != "报告生成失败,请联系客服" || st.LastError != "boom" || st.Result != nil {
		t.Errorf("failed: %+v", st)
	}
	b, _ := json.Marshal(st)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"id", "status", "statusText", "resultText", "lastError", "updatedAt"} {
		if _, ok := m[k]; !ok {
			t.Errorf("status JSON lacks %s: %s", k, b)
		}
	}
}

func TestRegenerate_BusinessErrors(t *testing.T) {
	svc, b, rs := newFlow(t)
	ctx := context.Background()
	if _, err := rs.Create(ctx, 1, report.StatusInProgress, nil); err != nil {
		t.Fatal(err)
	}
	if err := svc.Regenerate(ctx, 1); report.BusinessCode(err) != 2005 {
		t.Errorf("status 2: %v", err)
	}
	if err := svc.Regenerate(ctx, 2); report.BusinessCode(err) != 3241 {
		t.Errorf("unknown: %v", err)
	}
	if _, err := svc.BatchRegenerate(ctx, nil); report.BusinessCode(err) != 1001 {
		t.Errorf("empty: %v", err)
	}
	if _, err := rs.Submit(ctx, 3, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	res, err := svc.BatchRegenerate(ctx, []int64{1, 2, 3})
	if err != nil || res.SuccessCount != 1 || res.SkippedCount != 2 {
		t.Errorf("batch: %+v, %v", res, err)
	}
	if s, _ := b.Stats(ctx, svc.Queue()); s.Pending != 1 {
		t.Errorf("pending = %d", s.Pending)
	}
}

func TestGenerator_SkipsDoneAndHonoursCtx(t *testing.T) {
	rs := memrecords.New(memrecords.Options{})
	ctx := context.Background()
	ran := 0
	g := &report.Generator{Records: rs, Delay: time.Hour, OnRun: func(int64, int) { ran++ }}
	job := func(id int64) *queue.Delivery {
		raw, _ := queue.EncodeMessage(report.NewJob(id, time.Now(), nil))
		return queue.NewDelivery(report.DefaultQueue, "c", string(raw))
	}
	if err := g.Handle(ctx, job(1)); !queue.IsPermanent(err) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("unknown record: %v, want a permanent error (dead-lettered at once)", err)
	}
	if _, err := rs.Create(ctx, 2, report.StatusPending, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Handle(ctx, job(2)); !queue.IsPermanent(err) {
		t.Error("status 1: no error")
	}
	if _, err := rs.Submit(ctx, 3, json.RawMessage(`[1,2]`)); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := g.Handle(cctx, job(3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("canceled work: %v", err)
	}
	if r, _ := rs.Get(ctx, 3); r.Status != report.StatusGenerating {
		t.Errorf("status after interrupted work: %d", r.Status)
	}
	g.Delay = -1
	if err := g.Handle(ctx, job(3)); err != nil {
		t.Fatal(err)
	}
	if err := g.Handle(ctx, job(3)); err != nil { // redelivery: acknowledged, not run
		t.Fatal(err)
	}
	if ran != 2 {
		t.Errorf("ran = %d, want 2", ran)
	}
}

func TestCompute(t *testing.T) {
	rep, err := report.Compute(json.RawMessage(`{"a":{"x":1,"y":2},"b":[5,5,null],"c":"free text","d":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if rep.AnswerCount != 6 || rep.Score != 14 || rep.Average != 2.8 || rep.Level != "medium" {
		t.Errorf("report: %+v", rep)
	}
	if rep.Dimensions["a"].Average != 1.5 || rep.Dimensions["b"].Count != 2 || rep.Dimensions["d"].Sum != 1 {
		t.Errorf("dimensions: %+v", rep.Dimensions)
	}
	if _, ok := rep.Dimensions["c"]; ok {
		t.Error("text-only dimension reported")
	}
	again, _ := report.Compute(json.RawMessage(`{"d":true,"c":"free text","b":[5,5,null],"a":{"y":2,"x":1}}`))
	if again.Score != rep.Score || again.Average != rep.Average {
		t.Error("not deterministic")
	}
	if _, err := report.Compute(json.RawMessage(`{`)); !redstate.IsCode(err, redstate.EINVALID) {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestValidateAnswers_RefusesWhatCannotBeScored(t *testing.T) {
	for _, bad := range []string{`{"q":1e308,"r":1e308}`, `[1e308,1e308]`} {
		if err := report.ValidateAnswers(json.RawMessage(bad)); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("%s: %v, want EINVALID", bad, err)
		}
	}
	if err := report.ValidateAnswers(json.RawMessage(`{"q":[1,2,3],"name":"x"}`)); err != nil {
		t.Errorf("valid answers refused: %v", err)
	}
	svc, err := report.NewService(memqueue.NewBroker(memqueue.Options{}), memrecords.New(memrecords.Options{}), report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Submit(t.Context(), 5, json.RawMessage(`{"q":1e308,"r":1e308}`)); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("Submit of unscorable answers = %v, want EINVALID (400)", err)
	}
}
