package reporttest

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/report"
)

// RunProperties checks the report flow's properties 4 to 7 (设计文档 Correctness Properties: the
// regenerate operations) with rapid, each over at least 100 generated cases, against the
// backends newBroker and newRecords create. Properties 1 to 3 are the queue's
// (queuetest.RunProperties) plus PropertyJobRoundTrip.
func RunProperties(t *testing.T, newBroker queuetest.NewBroker, newRecords NewRecordStore) {
	t.Run("Property1_JobRoundTrip", func(t *testing.T) { PropertyJobRoundTrip(t) })
	t.Run("Property4_RegenerateResetsAndEnqueues", func(t *testing.T) {
		PropertyRegenerateResets(t, newBroker(t), newRecords(t))
	})
	t.Run("Property5_InvalidStatusRejected", func(t *testing.T) {
		PropertyInvalidStatusRejected(t, newBroker(t), newRecords(t))
	})
	t.Run("Property6_BatchFiltersByStatus", func(t *testing.T) {
		PropertyBatchFiltersByStatus(t, newBroker(t), newRecords(t))
	})
	t.Run("Property7_BatchCountInvariant", func(t *testing.T) {
		PropertyBatchCountInvariant(t, newBroker(t), newRecords(t))
	})
}

// newAdmin returns an Admin on a fresh queue.
func newAdmin(rt *rapid.T, b queue.Broker, rs report.RecordStore) (*report.Admin, string) {
	q := queuetest.NewQueueName()
	a, err := report.NewAdmin(b, rs, report.Options{Queue: q, Logger: quiet})
	if err != nil {
		rt.Fatal(err)
	}
	return a, q
}

// createRecord stores a record in status with answers and, for status 4, a result.
func createRecord(rt *rapid.T, rs report.RecordStore, id int64, status int) *report.Record {
	ctx := context.Background()
	answers := json.RawMessage(`{"answers":[1,2,3]}`)
	r, err := rs.Create(ctx, id, status, answers)
	if err == nil && status == report.StatusDone {
		r, err = rs.SetResult(ctx, id, json.RawMessage(`{"report":"done"}`))
	}
	if err == nil && status == report.StatusFailed {
		r, err = rs.SetFailed(ctx, id, "earlier failure")
	}
	if err != nil {
		rt.Fatalf("create record %d status %d: %v", id, status, err)
	}
	return r
}

// PropertyRegenerateResets is Property 4: 重新生成重置状态并入队 — for a record in status 3 or
// 5, Regenerate sets status 3, clears the result, and adds one message with RetryCount 0 for
// the record to the queue.
func PropertyRegenerateResets(t *testing.T, b queue.Broker, rs report.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		status := rapid.SampledFrom([]int{report.StatusGenerating, report.StatusFailed}).Draw(rt, "status")
		id := queuetest.NewIDs(1)[0]
		createRecord(rt, rs, id, status)
		a, q := newAdmin(rt, b, rs)
		if err := a.Regenerate(ctx, id); err != nil {
			rt.Fatalf("Regenerate: %v", err)
		}
		r, err := rs.Get(ctx, id)
		if err != nil || r.Status != report.StatusGenerating || r.Result != nil || r.Error != "" {
			rt.Fatalf("after Regenerate record = %+v, %v", r, err)
		}
		if st, _ := b.Stats(ctx, q); st != (queue.Stats{Pending: 1}) {
			rt.Fatalf("Stats = %+v, want one pending job", st)
		}
		if err := b.Heartbeat(ctx, q, "p4", longLease); err != nil {
			rt.Fatal(err)
		}
		d, err := b.Dequeue(ctx, q, "p4", time.Second)
		if err != nil || d == nil || recordIDOf(d.Message) != id || d.Message.RetryCount != 0 {
			rt.Fatalf("enqueued job = %+v, %v", d, err)
		}
		_ = b.Ack(ctx, d)
	})
}

// PropertyInvalidStatusRejected is Property 5: 非法状态拒绝重新生成 — for a record in status 1,
// 2 or 4, Regenerate fails with business error 2005 and the record (status and result) and the
// queue are unchanged.
func PropertyInvalidStatusRejected(t *testing.T, b queue.Broker, rs report.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		status := rapid.SampledFrom([]int{report.StatusPending, report.StatusInProgress, report.StatusDone}).Draw(rt, "status")
		id := queuetest.NewIDs(1)[0]
		before := createRecord(rt, rs, id, status)
		a, q := newAdmin(rt, b, rs)
		err := a.Regenerate(ctx, id)
		if report.BusinessCode(err) != report.CodeInvalidOperation || !redstate.IsCode(err, redstate.ECONFLICT) {
			rt.Fatalf("Regenerate(status %d) err = %v, want 2005", status, err)
		}
		after, err := rs.Get(ctx, id)
		if err != nil || after.Status != before.Status || string(after.Result) != string(before.Result) ||
			!after.UpdatedAt.Equal(before.UpdatedAt) {
			rt.Fatalf("record changed: %+v → %+v (%v)", before, after, err)
		}
		if st, _ := b.Stats(ctx, q); st != (queue.Stats{}) {
			rt.Fatalf("queue changed: %+v", st)
		}
	})
}

// PropertyBatchFiltersByStatus is Property 6: 批量重新生成按状态过滤 — for a list of records in
// mixed statuses (and unknown ids), BatchRegenerate regenerates exactly the records in status 3
// or 5; every other record is skipped and unchanged.
func PropertyBatchFiltersByStatus(t *testing.T, b queue.Broker, rs report.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		statuses := rapid.SliceOfN(rapid.IntRange(0, 5), 1, 20).Draw(rt, "statuses") // 0: no record
		ids := queuetest.NewIDs(len(statuses))
		before := map[int64]*report.Record{}
		regenerable := 0
		for i, st := range statuses {
			if st == 0 {
				continue
			}
			before[ids[i]] = createRecord(rt, rs, ids[i], st)
			if report.Regenerable(st) {
				regenerable++
			}
		}
		a, q := newAdmin(rt, b, rs)
		res, err := a.BatchRegenerate(ctx, ids)
		if err != nil {
			rt.Fatalf("BatchRegenerate: %v", err)
		}
		if res.SuccessCount != regenerable || res.SkippedCount != len(ids)-regenerable {
			rt.Fatalf("result %+v, want %d successes of %d", res, regenerable, len(ids))
		}
		for i, st := range statuses {
			id := ids[i]
			has, err := b.HasJob(ctx, q, report.IsJobFor(id))
			if err != nil {
				rt.Fatal(err)
			}
			if has != report.Regenerable(st) {
				rt.Fatalf("record %d status %d: queued = %v", id, st, has)
			}
			if st == 0 {
				continue
			}
			after, err := rs.Get(ctx, id)
			if err != nil {
				rt.Fatal(err)
			}
			if report.Regenerable(st) {
				if after.Status != report.StatusGenerating || after.Result != nil || after.Error != "" {
					rt.Fatalf("regenerated record = %+v", after)
				}
			} else if after.Status != st || string(after.Result) != string(before[id].Result) || !after.UpdatedAt.Equal(before[id].UpdatedAt) {
				rt.Fatalf("skipped record changed: %+v → %+v", before[id], after)
			}
		}
		if st, _ := b.Stats(ctx, q); st.Pending != int64(regenerable) {
			rt.Fatalf("pending = %d, want %d", st.Pending, regenerable)
		}
	})
}

// PropertyBatchCountInvariant is Property 7: 批量操作计数不变量 — for any non-empty id list
// (unknown ids, repeated ids, any statuses, enqueue failures included), SuccessCount +
// SkippedCount equals the list's length.
func PropertyBatchCountInvariant(t *testing.T, b queue.Broker, rs report.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		pool := queuetest.NewIDs(10)
		for _, id := range pool {
			if st := rapid.IntRange(0, 5).Draw(rt, "status"); st != 0 {
				createRecord(rt, rs, id, st)
			}
		}
		ids := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 50).Draw(rt, "ids")
		fb := &queuetest.FlakyBroker{Broker: b}
		fb.FailEnqueue.Store(int32(rapid.IntRange(0, 3).Draw(rt, "enqueueFailures")))
		a, _ := newAdmin(rt, fb, rs)
		res, err := a.BatchRegenerate(ctx, ids)
		if err != nil {
			rt.Fatalf("BatchRegenerate: %v", err)
		}
		if res.SuccessCount+res.SkippedCount != len(ids) {
			rt.Fatalf("SuccessCount %d + SkippedCount %d != %d ids", res.SuccessCount, res.SkippedCount, len(ids))
		}
	})
}

// PropertyJobRoundTrip is Property 1 for report jobs: 队列消息序列化/反序列化 round trip — any report job
// (RecordId in [1, MaxInt64], RetryCount in [0, MaxRetryCount], any EnqueueTime, optionally a
// payload) encodes to the legacy application's JSON, RecordId first, and decodes back to the same
// record id and envelope.
func PropertyJobRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		id := rapid.Int64Range(1, math.MaxInt64).Draw(rt, "recordId")
		now := time.Unix(rapid.Int64Range(0, 7258118400).Draw(rt, "enqueueUnix"), 0)
		var payload json.RawMessage
		if rapid.Bool().Draw(rt, "hasPayload") {
			payload, _ = json.Marshal(map[string]any{"k": rapid.String().Draw(rt, "payload")})
		}
		m := report.NewJob(id, now, payload)
		m.RetryCount = rapid.IntRange(0, queue.DefaultMaxRetries).Draw(rt, "retryCount")
		b, err := queue.EncodeMessage(m)
		if err != nil {
			rt.Fatalf("encode: %v", err)
		}
		if want := `{"RecordId":` + strconv.FormatInt(id, 10) + `,"RetryCount":`; !strings.HasPrefix(string(b), want) {
			rt.Fatalf("encoded %s, want the prefix %s", b, want)
		}
		got, err := queue.DecodeMessage(b)
		if err != nil {
			rt.Fatalf("decode %s: %v", b, err)
		}
		if gid, err := report.RecordIDOf(got); err != nil || gid != id || got.RetryCount != m.RetryCount ||
			!got.EnqueueTime.Equal(m.EnqueueTime) || string(got.Payload) != string(m.Payload) || got.JobID != m.JobID {
			rt.Fatalf("round trip: %+v → %s → %+v (%v)", m, b, got, err)
		}
	})
}
