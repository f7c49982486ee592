package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// RunProperties checks the seed's seven correctness properties (设计文档 Correctness
// Properties) with rapid, each over at least 100 generated cases (rapid's default -rapid.checks
// is 100), against the backends newBroker and newRecords create.
func RunProperties(t *testing.T, newBroker NewBroker, newRecords NewRecordStore) {
	t.Run("Property1_MessageRoundTrip", func(t *testing.T) { PropertyMessageRoundTrip(t) })
	t.Run("Property2_ListRoundTrip", func(t *testing.T) { PropertyListRoundTrip(t, newBroker(t)) })
	t.Run("Property3_RetryIncrementsRetryCount", func(t *testing.T) { PropertyRetryIncrements(t, newBroker(t)) })
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

// quiet is a logger that discards everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// genMessage draws a valid message: RecordID in [1, MaxInt64], RetryCount in [0, max], a
// whole-second EnqueueTime between 1970 and 2200, optionally a payload and a JobID.
func genMessage(t *rapid.T, maxRetry int) queue.Message {
	m := queue.Message{
		RecordID:    rapid.Int64Range(1, math.MaxInt64).Draw(t, "recordId"),
		RetryCount:  rapid.IntRange(0, maxRetry).Draw(t, "retryCount"),
		EnqueueTime: time.Unix(rapid.Int64Range(0, 7258118400).Draw(t, "enqueueUnix"), 0).UTC(),
	}
	if rapid.Bool().Draw(t, "hasPayload") {
		p, _ := json.Marshal(map[string]any{"k": rapid.String().Draw(t, "payload")})
		m.Payload = p
	}
	if rapid.Bool().Draw(t, "hasJobId") {
		m.JobID = queue.NewJobID()
	}
	return m
}

// PropertyMessageRoundTrip is Property 1: 队列消息序列化/反序列化 round trip — any valid
// message (RecordId > 0, RetryCount in [0, MaxRetryCount], any EnqueueTime) encodes to JSON and
// decodes back to an equal message, with the seed's field names and EnqueueTime format.
func PropertyMessageRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMessage(t, queue.DefaultMaxRetries)
		b, err := queue.EncodeMessage(m)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		got, err := queue.DecodeMessage(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !equalMessage(got, m) {
			t.Fatalf("round trip: %+v → %s → %+v", m, b, got)
		}
		var wire map[string]any
		_ = json.Unmarshal(b, &wire)
		if wire["EnqueueTime"] != m.EnqueueTime.Format("2006-01-02T15:04:05") {
			t.Fatalf("EnqueueTime on the wire = %v", wire["EnqueueTime"])
		}
		if _, ok := wire["RecordId"]; !ok {
			t.Fatalf("no RecordId field in %s", b)
		}
	})
}

// PropertyListRoundTrip is Property 2: Redis List LPUSH/BRPOP round trip — after N pushes of
// non-empty strings onto a queue the pending count is N, and N blocking pops return every
// value, verbatim, in FIFO order.
func PropertyListRoundTrip(t *testing.T, b queue.Broker) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		values := rapid.SliceOfN(rapid.StringN(1, 64, -1), 1, 20).Draw(rt, "values")
		q := NewQueueName()
		if err := b.Heartbeat(ctx, q, "p2", longLease); err != nil {
			rt.Fatal(err)
		}
		for _, v := range values {
			if err := b.EnqueueRaw(ctx, q, v); err != nil {
				rt.Fatalf("EnqueueRaw: %v", err)
			}
		}
		if st, err := b.Stats(ctx, q); err != nil || st.Pending != int64(len(values)) {
			rt.Fatalf("Stats = %+v, %v; want Pending %d", st, err, len(values))
		}
		for i, v := range values {
			d, err := b.Dequeue(ctx, q, "p2", time.Second)
			if err != nil || d == nil {
				rt.Fatalf("Dequeue %d = %v, %v", i, d, err)
			}
			if d.Raw != v {
				rt.Fatalf("Dequeue %d = %q, want %q (FIFO)", i, d.Raw, v)
			}
			if err := b.Ack(ctx, d); err != nil {
				rt.Fatalf("Ack: %v", err)
			}
		}
	})
}

// PropertyRetryIncrements is Property 3: 失败重试递增 RetryCount — when the handler fails a
// message whose RetryCount is in [0, MaxRetryCount), the job comes back (after its delay, from
// the retry schedule, never by sleeping) with RetryCount+1 and the same RecordId and
// EnqueueTime.
func PropertyRetryIncrements(t *testing.T, b queue.Broker) {
	ctx := context.Background()
	now := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		m := genMessage(rt, queue.DefaultMaxRetries-1)
		q := NewQueueName()
		w, err := queue.NewWorker(b, nil, func(context.Context, *queue.Delivery) error {
			return errors.New("generation failed")
		}, queue.Config{Queue: q, ConsumerID: "p3", Logger: quiet, Now: func() time.Time { return now }})
		if err != nil {
			rt.Fatal(err)
		}
		if err := b.Heartbeat(ctx, q, "p3", longLease); err != nil {
			rt.Fatal(err)
		}
		if err := b.Enqueue(ctx, q, m); err != nil {
			rt.Fatal(err)
		}
		d, err := b.Dequeue(ctx, q, "p3", time.Second)
		if err != nil || d == nil {
			rt.Fatalf("Dequeue = %v, %v", d, err)
		}
		w.Process(ctx, d)
		if st, _ := b.Stats(ctx, q); st != (queue.Stats{Retrying: 1}) {
			rt.Fatalf("after failure Stats = %+v, want one retrying job", st)
		}
		due := now.Add(queue.DefaultRetryDelays()[m.RetryCount])
		if n, _ := b.PromoteDue(ctx, q, due.Add(-time.Millisecond), 10); n != 0 {
			rt.Fatalf("retry promoted before its delay")
		}
		if n, _ := b.PromoteDue(ctx, q, due, 10); n != 1 {
			rt.Fatalf("retry not promoted at its due time")
		}
		d2, err := b.Dequeue(ctx, q, "p3", time.Second)
		if err != nil || d2 == nil {
			rt.Fatalf("Dequeue retried = %v, %v", d2, err)
		}
		want := m
		want.RetryCount++
		if !equalMessage(d2.Message, want) {
			rt.Fatalf("retried message = %+v, want %+v", d2.Message, want)
		}
		_ = b.Ack(ctx, d2)
	})
}

// newAdmin returns an Admin on a fresh queue.
func newAdmin(rt *rapid.T, b queue.Broker, rs queue.RecordStore) (*queue.Admin, string) {
	q := NewQueueName()
	a, err := queue.NewAdmin(b, rs, queue.AdminOptions{Queue: q, Logger: quiet})
	if err != nil {
		rt.Fatal(err)
	}
	return a, q
}

// createRecord stores a record in status with answers and, for status 4, a result.
func createRecord(rt *rapid.T, rs queue.RecordStore, id int64, status int) *queue.Record {
	ctx := context.Background()
	answers := json.RawMessage(`{"answers":[1,2,3]}`)
	r, err := rs.Create(ctx, id, status, answers)
	if err == nil && status == queue.StatusDone {
		r, err = rs.SetResult(ctx, id, json.RawMessage(`{"report":"done"}`))
	}
	if err == nil && status == queue.StatusFailed {
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
func PropertyRegenerateResets(t *testing.T, b queue.Broker, rs queue.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		status := rapid.SampledFrom([]int{queue.StatusGenerating, queue.StatusFailed}).Draw(rt, "status")
		id := NewRecordIDs(1)[0]
		createRecord(rt, rs, id, status)
		a, q := newAdmin(rt, b, rs)
		if err := a.Regenerate(ctx, id); err != nil {
			rt.Fatalf("Regenerate: %v", err)
		}
		r, err := rs.Get(ctx, id)
		if err != nil || r.Status != queue.StatusGenerating || r.Result != nil || r.Error != "" {
			rt.Fatalf("after Regenerate record = %+v, %v", r, err)
		}
		if st, _ := b.Stats(ctx, q); st != (queue.Stats{Pending: 1}) {
			rt.Fatalf("Stats = %+v, want one pending job", st)
		}
		if err := b.Heartbeat(ctx, q, "p4", longLease); err != nil {
			rt.Fatal(err)
		}
		d, err := b.Dequeue(ctx, q, "p4", time.Second)
		if err != nil || d == nil || d.Message.RecordID != id || d.Message.RetryCount != 0 {
			rt.Fatalf("enqueued job = %+v, %v", d, err)
		}
		_ = b.Ack(ctx, d)
	})
}

// PropertyInvalidStatusRejected is Property 5: 非法状态拒绝重新生成 — for a record in status 1,
// 2 or 4, Regenerate fails with business error 2005 and the record (status and result) and the
// queue are unchanged.
func PropertyInvalidStatusRejected(t *testing.T, b queue.Broker, rs queue.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		status := rapid.SampledFrom([]int{queue.StatusPending, queue.StatusInProgress, queue.StatusDone}).Draw(rt, "status")
		id := NewRecordIDs(1)[0]
		before := createRecord(rt, rs, id, status)
		a, q := newAdmin(rt, b, rs)
		err := a.Regenerate(ctx, id)
		if queue.BusinessCode(err) != queue.CodeInvalidOperation || !redstate.IsCode(err, redstate.ECONFLICT) {
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
func PropertyBatchFiltersByStatus(t *testing.T, b queue.Broker, rs queue.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		statuses := rapid.SliceOfN(rapid.IntRange(0, 5), 1, 20).Draw(rt, "statuses") // 0: no record
		ids := NewRecordIDs(len(statuses))
		before := map[int64]*queue.Record{}
		regenerable := 0
		for i, st := range statuses {
			if st == 0 {
				continue
			}
			before[ids[i]] = createRecord(rt, rs, ids[i], st)
			if queue.Regenerable(st) {
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
			has, err := b.HasJobFor(ctx, q, id)
			if err != nil {
				rt.Fatal(err)
			}
			if has != queue.Regenerable(st) {
				rt.Fatalf("record %d status %d: queued = %v", id, st, has)
			}
			if st == 0 {
				continue
			}
			after, err := rs.Get(ctx, id)
			if err != nil {
				rt.Fatal(err)
			}
			if queue.Regenerable(st) {
				if after.Status != queue.StatusGenerating || after.Result != nil || after.Error != "" {
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
func PropertyBatchCountInvariant(t *testing.T, b queue.Broker, rs queue.RecordStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		pool := NewRecordIDs(10)
		for _, id := range pool {
			if st := rapid.IntRange(0, 5).Draw(rt, "status"); st != 0 {
				createRecord(rt, rs, id, st)
			}
		}
		ids := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 50).Draw(rt, "ids")
		fb := &FlakyBroker{Broker: b}
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
