package queuetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redstate/redstate/queue"
)

// RunProperties checks the queue's three correctness properties (message round trip, list round
// trip, a retry increments RetryCount; on the generic envelope) and the job-record model
// (PropertyJobsMatchModel) with rapid, each over at least 100
// generated cases (rapid's default
// -rapid.checks is 100), against the backend newBroker creates.
func RunProperties(t *testing.T, newBroker NewBroker) {
	t.Run("Property1_MessageRoundTrip", func(t *testing.T) { PropertyMessageRoundTrip(t) })
	t.Run("Property2_ListRoundTrip", func(t *testing.T) { PropertyListRoundTrip(t, newBroker(t)) })
	t.Run("Property3_RetryIncrementsRetryCount", func(t *testing.T) { PropertyRetryIncrements(t, newBroker(t)) })
	t.Run("JobsMatchModel", func(t *testing.T) { PropertyJobsMatchModel(t, newBroker(t)) })
}

// quiet is a logger that discards everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// genMessage draws a valid message: RetryCount in [0, max], a whole-second EnqueueTime between
// 1970 and 2200, optionally a payload, a JobID and a producer's own member "Key" (an integer
// in [1, MaxInt64]).
func genMessage(t *rapid.T, maxRetry int) queue.Message {
	m := queue.Message{
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
	if rapid.Bool().Draw(t, "hasKey") {
		key := strconv.FormatInt(rapid.Int64Range(1, math.MaxInt64).Draw(t, "key"), 10)
		m.Fields = map[string]json.RawMessage{"Key": json.RawMessage(key)}
	}
	return m
}

// PropertyMessageRoundTrip is Property 1: 队列消息序列化/反序列化 round trip — any valid
// message (RetryCount in [0, MaxRetryCount], any EnqueueTime, a producer's own members) encodes
// to JSON and decodes back to an equal message, with the envelope's member names and
// EnqueueTime format, the producer's members first.
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
		if _, ok := wire["RetryCount"]; !ok {
			t.Fatalf("no RetryCount member in %s", b)
		}
		if m.Fields != nil && !bytes.HasPrefix(b, []byte(`{"Key":`)) {
			t.Fatalf("the producer's member is not first in %s", b)
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
// the retry schedule, never by sleeping) with RetryCount+1 and the same members, payload
// and EnqueueTime.
func PropertyRetryIncrements(t *testing.T, b queue.Broker) {
	ctx := context.Background()
	now := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		m := genMessage(rt, queue.DefaultMaxRetries-1)
		q := NewQueueName()
		w, err := queue.NewWorker(b, func(context.Context, *queue.Delivery) error {
			return errors.New("generation failed")
		}, queue.WorkerSettings{Queue: q, ConsumerID: "p3", Logger: quiet, Now: func() time.Time { return now }})
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
