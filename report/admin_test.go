package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/queuetest"
)

func newAdmin(t *testing.T, b queue.Broker, rs queue.RecordStore) *queue.Admin {
	t.Helper()
	a, err := queue.NewAdmin(b, rs, queue.AdminOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAdmin_BusinessErrors(t *testing.T) {
	b, rs := memqueue.NewBroker(memqueue.Options{}), memqueue.NewRecordStore(memqueue.RecordOptions{})
	a := newAdmin(t, b, rs)
	ctx := context.Background()

	err := a.Regenerate(ctx, 404)
	var be *queue.BusinessError
	if !errors.As(err, &be) || be.Code != 3241 || be.Message != "测评记录不存在" || !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := rs.Create(ctx, 1, queue.StatusDone, nil); err != nil {
		t.Fatal(err)
	}
	err = a.Regenerate(ctx, 1)
	if queue.BusinessCode(err) != 2005 || redstate.ErrorMessage(err) != "当前状态不允许重新生成" || !redstate.IsCode(err, redstate.ECONFLICT) {
		t.Fatalf("status 4: %v", err)
	}
	_, err = a.BatchRegenerate(ctx, nil)
	if queue.BusinessCode(err) != 1001 || redstate.ErrorMessage(err) != "记录ID列表不能为空" || !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("empty batch: %v", err)
	}
}

func TestAdmin_BatchCountsEnqueueFailureAsSkipped(t *testing.T) {
	fb := &queuetest.FlakyBroker{Broker: memqueue.NewBroker(memqueue.Options{})}
	rs := memqueue.NewRecordStore(memqueue.RecordOptions{})
	ctx := context.Background()
	for _, id := range []int64{1, 2, 3} {
		if _, err := rs.Create(ctx, id, queue.StatusFailed, nil); err != nil {
			t.Fatal(err)
		}
	}
	fb.FailEnqueue.Store(1)
	res, err := newAdmin(t, fb, rs).BatchRegenerate(ctx, []int64{1, 2, 3, 3, 99})
	if err != nil || res != (queue.BatchRegenerateResult{SuccessCount: 2, SkippedCount: 3}) {
		t.Fatalf("BatchRegenerate = %+v, %v", res, err)
	}
	b, _ := json.Marshal(res)
	if string(b) != `{"SuccessCount":2,"SkippedCount":3}` {
		t.Fatalf("JSON = %s", b)
	}
}

func TestReconciler_ReenqueuesStrandedRecords(t *testing.T) {
	b, rs := memqueue.NewBroker(memqueue.Options{}), memqueue.NewRecordStore(memqueue.RecordOptions{})
	ctx := context.Background()
	p := queue.NewProducer(b, "")
	for _, id := range []int64{1, 2} {
		if _, err := rs.Submit(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Enqueue(ctx, 2, nil); err != nil { // record 2 has its job; record 1 is stranded
		t.Fatal(err)
	}
	r, err := queue.NewReconciler(b, rs, queue.ReconcilerConfig{Age: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.ReconcileOnce(ctx); err != nil || n != 1 {
		t.Fatalf("ReconcileOnce = %d, %v; want 1", n, err)
	}
	if has, _ := b.HasJobFor(ctx, queue.DefaultQueue, 1); !has {
		t.Fatal("stranded record not enqueued")
	}
	if n, err := r.ReconcileOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second ReconcileOnce = %d, %v; want 0", n, err)
	}
}

func TestProducer_SubmitSurvivesEnqueueFailure(t *testing.T) {
	fb := &queuetest.FlakyBroker{Broker: memqueue.NewBroker(memqueue.Options{})}
	fb.FailEnqueue.Store(1)
	rs := memqueue.NewRecordStore(memqueue.RecordOptions{})
	rec, err := queue.NewProducer(fb, "").Submit(context.Background(), rs, 5, json.RawMessage(`{}`), nil)
	if err != nil || rec.Status != queue.StatusGenerating {
		t.Fatalf("Submit = %+v, %v", rec, err)
	}
}
