package report_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
)

func newAdmin(t *testing.T, b queue.Broker, rs report.RecordStore) *report.Admin {
	t.Helper()
	a, err := report.NewAdmin(b, rs, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAdmin_BusinessErrors(t *testing.T) {
	b, rs := memqueue.NewBroker(memqueue.Options{}), memrecords.New(memrecords.Options{})
	a := newAdmin(t, b, rs)
	ctx := context.Background()

	err := a.Regenerate(ctx, 404)
	var be *report.BusinessError
	if !errors.As(err, &be) || be.Code != 3241 || be.Message != "测评记录不存在" || !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := rs.Create(ctx, 1, report.StatusDone, nil); err != nil {
		t.Fatal(err)
	}
	err = a.Regenerate(ctx, 1)
	if report.BusinessCode(err) != 2005 || redstate.ErrorMessage(err) != "当前状态不允许重新生成" || !redstate.IsCode(err, redstate.ECONFLICT) {
		t.Fatalf("status 4: %v", err)
	}
	_, err = a.BatchRegenerate(ctx, nil)
	if report.BusinessCode(err) != 1001 || redstate.ErrorMessage(err) != "记录ID列表不能为空" || !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("empty batch: %v", err)
	}
}

func TestAdmin_BatchCountsEnqueueFailureAsSkipped(t *testing.T) {
	fb := &queuetest.FlakyBroker{Broker: memqueue.NewBroker(memqueue.Options{})}
	rs := memrecords.New(memrecords.Options{})
	ctx := context.Background()
	for _, id := range []int64{1, 2, 3} {
		if _, err := rs.Create(ctx, id, report.StatusFailed, nil); err != nil {
			t.Fatal(err)
		}
	}
	fb.FailEnqueue.Store(1)
	res, err := newAdmin(t, fb, rs).BatchRegenerate(ctx, []int64{1, 2, 3, 3, 99})
	if err != nil || res != (report.BatchRegenerateResult{SuccessCount: 2, SkippedCount: 3}) {
		t.Fatalf("BatchRegenerate = %+v, %v", res, err)
	}
	b, _ := json.Marshal(res)
	if string(b) != `{"SuccessCount":2,"SkippedCount":3}` {
		t.Fatalf("JSON = %s", b)
	}
}

func TestReconciler_ReenqueuesStrandedRecords(t *testing.T) {
	b, rs := memqueue.NewBroker(memqueue.Options{}), memrecords.New(memrecords.Options{})
	ctx := context.Background()
	for _, id := range []int64{1, 2} {
		if _, err := rs.Submit(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Enqueue(ctx, report.DefaultQueue, report.NewJob(2, time.Now(), nil)); err != nil { // record 2 has its job; record 1 is stranded
		t.Fatal(err)
	}
	r, err := report.NewReconciler(b, rs, report.ReconcilerSettings{Age: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.ReconcileOnce(ctx); err != nil || n != 1 {
		t.Fatalf("ReconcileOnce = %d, %v; want 1", n, err)
	}
	if has, _ := b.HasJob(ctx, report.DefaultQueue, report.IsJobFor(1)); !has {
		t.Fatal("stranded record not enqueued")
	}
	if n, err := r.ReconcileOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second ReconcileOnce = %d, %v; want 0", n, err)
	}
}

func TestService_SubmitSurvivesEnqueueFailure(t *testing.T) {
	fb := &queuetest.FlakyBroker{Broker: memqueue.NewBroker(memqueue.Options{})}
	fb.FailEnqueue.Store(1)
	rs := memrecords.New(memrecords.Options{})
	svc, err := report.NewService(fb, rs, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := svc.Submit(context.Background(), 5, json.RawMessage(`{}`))
	if err != nil || rec.Status != report.StatusGenerating {
		t.Fatalf("Submit = %+v, %v", rec, err)
	}
}
