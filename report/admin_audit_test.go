package report_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
	"github.com/redstate/redstate/report/reporttest"
)

// TestAdminAudit_BatchOverLimitIsParamError: docs/queue.md — code 1001 (invalid, 400) also for a
// batch of more than 1000 ids; nothing is regenerated.
func TestAdminAudit_BatchOverLimitIsParamError(t *testing.T) {
	b, rs := memqueue.NewBroker(memqueue.Options{}), memrecords.New(memrecords.Options{})
	ctx := context.Background()
	ids := make([]int64, report.MaxBatchRegenerate+1)
	for i := range ids {
		ids[i] = int64(i + 1)
		if _, err := rs.Create(ctx, ids[i], report.StatusFailed, nil); err != nil {
			t.Fatal(err)
		}
	}
	a := newAdmin(t, b, rs)
	res, err := a.BatchRegenerate(ctx, ids)
	if report.BusinessCode(err) != 1001 || !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("BatchRegenerate(%d ids) = %+v, %v; want 1001/invalid", len(ids), res, err)
	}
	if st, _ := b.Stats(ctx, report.DefaultQueue); st.Pending != 0 {
		t.Fatalf("an over-limit batch enqueued %d jobs", st.Pending)
	}
	// Exactly the limit is accepted.
	res, err = a.BatchRegenerate(ctx, ids[:report.MaxBatchRegenerate])
	if err != nil || res.SuccessCount != report.MaxBatchRegenerate {
		t.Fatalf("BatchRegenerate(1000 ids) = %+v, %v", res, err)
	}
}

// TestBrokerAudit_RetriedLegacyMessageStaysWithoutJobID: a legacy producer's message that is
// retried is re-encoded in the current format, still without JobId, identity kept.
func TestBrokerAudit_RetriedLegacyMessageStaysWithoutJobID(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	ctx := context.Background()
	q, c := report.DefaultQueue, "consumer-1"
	if err := b.Heartbeat(ctx, q, c, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.EnqueueRaw(ctx, q, reporttest.LegacyMessage); err != nil {
		t.Fatal(err)
	}
	d, err := b.Dequeue(ctx, q, c, time.Second)
	if err != nil || d == nil {
		t.Fatalf("Dequeue = %v, %v", d, err)
	}
	if err := b.Retry(ctx, d, d.Message.NextRetry(), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := b.PromoteDue(ctx, q, time.Now(), 10); err != nil || n != 1 {
		t.Fatalf("PromoteDue = %d, %v", n, err)
	}
	d2, err := b.Dequeue(ctx, q, c, time.Second)
	if err != nil || d2 == nil {
		t.Fatalf("Dequeue retried = %v, %v", d2, err)
	}
	if strings.Contains(d2.Raw, "JobId") {
		t.Fatalf("retried legacy message gained a JobId: %s", d2.Raw)
	}
	if id, _ := report.RecordIDOf(d2.Message); id != 12345 || d2.Message.RetryCount != 1 || !d2.Message.EnqueueTime.Equal(d.Message.EnqueueTime) {
		t.Fatalf("retried legacy message = %+v (raw %s)", d2.Message, d2.Raw)
	}
}
