package queuetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// ForeignMessage is a message as a producer outside redstate LPUSHes it: the smallest envelope
// plus a member of its own, and no JobId.
const ForeignMessage = `{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`

// brokerSuite carries the backend under test into the subtests.
type brokerSuite struct {
	newBroker NewBroker
	features  Features
}

// RunBrokerSuite runs every Broker conformance test against the backend newBroker creates.
func RunBrokerSuite(t *testing.T, newBroker NewBroker, f Features) {
	s := brokerSuite{newBroker: newBroker, features: f}
	RunGroups(t, map[string][]NamedTest{
		"Enqueue":    s.enqueueTests(),
		"Settle":     s.settleTests(),
		"Lease":      s.leaseTests(),
		"DeadLetter": s.deadTests(),
		"Inspect":    s.inspectTests(),
		"Batch":      s.batchTests(),
		"Jobs":       s.jobTests(),
	})
}

// setup returns a broker, a fresh queue and a leased consumer.
func (s brokerSuite) setup(t *testing.T) (queue.Broker, string, string) {
	t.Helper()
	b := s.newBroker(t)
	q := NewQueueName()
	mustLease(t, b, q, "c1")
	return b, q, "c1"
}

func (s brokerSuite) enqueueTests() []NamedTest {
	return []NamedTest{
		{"SameJobIDIsACopy", func(t *testing.T) {
			// An Enqueue of a job id enqueued moments ago (a repeated call after an unknown
			// outcome, or the Redis client's own re-send) appends nothing and succeeds; the
			// job runs once. Other ids, jobs without an id and raw strings are not affected.
			b, q, c := s.setup(t)
			ctx := context.Background()
			m := mustEnqueue(t, b, q, NewIDs(1)[0])
			if err := b.Enqueue(ctx, q, m); err != nil {
				t.Fatalf("Enqueue of the same job again: %v", err)
			}
			again := m
			again.RetryCount = 2 // the job id alone decides
			if err := b.Enqueue(ctx, q, again); err != nil {
				t.Fatalf("Enqueue of the same job id again: %v", err)
			}
			wantStats(t, b, q, queue.Stats{Pending: 1})
			d := mustDequeue(t, b, q, c)
			if d.Message.JobID != m.JobID || d.Message.RetryCount != 0 {
				t.Fatalf("delivered %+v, want the first enqueue of job %s", d.Message, m.JobID)
			}
			if err := b.Ack(ctx, d); err != nil {
				t.Fatal(err)
			}
			if err := b.Enqueue(ctx, q, m); err != nil {
				t.Fatalf("Enqueue of a job just run: %v", err)
			}
			wantStats(t, b, q, queue.Stats{})
			other := q + ":other"
			if err := b.Enqueue(ctx, other, m); err != nil {
				t.Fatal(err)
			}
			wantStats(t, b, other, queue.Stats{Pending: 1})
			anon := Message(NewIDs(1)[0])
			anon.JobID = ""
			for range 2 {
				if err := b.Enqueue(ctx, q, anon); err != nil {
					t.Fatal(err)
				}
				if err := b.EnqueueRaw(ctx, q, ForeignMessage); err != nil {
					t.Fatal(err)
				}
			}
			wantStats(t, b, q, queue.Stats{Pending: 4})
		}},
		{"FIFO", func(t *testing.T) {
			b, q, c := s.setup(t)
			ids := NewIDs(5)
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			wantStats(t, b, q, queue.Stats{Pending: 5})
			for i, id := range ids {
				d := mustDequeue(t, b, q, c)
				if IDOf(d.Message) != id || d.DecodeErr != nil {
					t.Fatalf("dequeue %d: id %d (err %v), want %d", i, IDOf(d.Message), d.DecodeErr, id)
				}
				if d.Queue != q || d.ConsumerID != c {
					t.Fatalf("delivery queue/consumer = %q/%q", d.Queue, d.ConsumerID)
				}
			}
			wantStats(t, b, q, queue.Stats{Running: 5})
		}},
		{"DequeueTimesOutEmpty", func(t *testing.T) {
			b, q, c := s.setup(t)
			start := time.Now()
			d, err := b.Dequeue(context.Background(), q, c, 200*time.Millisecond)
			if err != nil || d != nil {
				t.Fatalf("Dequeue on empty queue = %v, %v; want nil, nil", d, err)
			}
			if el := time.Since(start); el < 150*time.Millisecond {
				t.Fatalf("Dequeue returned after %v, before its timeout", el)
			}
		}},
		{"DequeueWakesOnEnqueue", func(t *testing.T) {
			b, q, c := s.setup(t)
			id := NewIDs(1)[0]
			got := make(chan *queue.Delivery, 1)
			go func() {
				d, _ := b.Dequeue(context.Background(), q, c, 5*time.Second)
				got <- d
			}()
			time.Sleep(50 * time.Millisecond) // let the consumer block (not needed for correctness)
			start := time.Now()
			mustEnqueue(t, b, q, id)
			select {
			case d := <-got:
				if d == nil || IDOf(d.Message) != id {
					t.Fatalf("woken Dequeue = %+v", d)
				}
				if el := time.Since(start); el > 2*time.Second {
					t.Fatalf("Dequeue woke %v after the enqueue", el)
				}
			case <-time.After(waitFor):
				t.Fatal("Dequeue did not wake on enqueue")
			}
		}},
		{"DequeueHonoursContext", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			d, err := b.Dequeue(ctx, q, c, 10*time.Second)
			if d != nil || err == nil {
				t.Fatalf("Dequeue with ended ctx = %v, %v; want an error", d, err)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatal("Dequeue ignored its ctx")
			}
		}},
		{"DequeueRequiresLease", func(t *testing.T) {
			b := s.newBroker(t)
			q := NewQueueName()
			mustEnqueue(t, b, q, NewIDs(1)[0])
			_, err := b.Dequeue(context.Background(), q, "nolease", 100*time.Millisecond)
			wantCode(t, err, redstate.ECONFLICT)
			wantStats(t, b, q, queue.Stats{Pending: 1})
		}},
		{"ForeignMessage", func(t *testing.T) {
			b, q, c := s.setup(t)
			if err := b.EnqueueRaw(context.Background(), q, ForeignMessage); err != nil {
				t.Fatal(err)
			}
			d := mustDequeue(t, b, q, c)
			want := queue.Message{EnqueueTime: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
				Fields: map[string]json.RawMessage{"Key": json.RawMessage("12345")}}
			if d.DecodeErr != nil || d.Raw != ForeignMessage || !equalMessage(d.Message, want) {
				t.Fatalf("legacy delivery = %+v", d)
			}
			if err := b.Ack(context.Background(), d); err != nil {
				t.Fatalf("Ack legacy: %v", err)
			}
			wantStats(t, b, q, queue.Stats{})
		}},
		{"MalformedDeliveredWithDecodeErr", func(t *testing.T) {
			b, q, c := s.setup(t)
			if err := b.EnqueueRaw(context.Background(), q, "{not json"); err != nil {
				t.Fatal(err)
			}
			d := mustDequeue(t, b, q, c)
			if d.DecodeErr == nil || d.Raw != "{not json" {
				t.Fatalf("malformed delivery = %+v", d)
			}
			if err := b.Ack(context.Background(), d); err != nil {
				t.Fatalf("Ack malformed: %v", err)
			}
		}},
		{"QueuesIsolated", func(t *testing.T) {
			b, q1, c := s.setup(t)
			q2 := NewQueueName()
			mustLease(t, b, q2, c)
			id := NewIDs(1)[0]
			mustEnqueue(t, b, q1, id)
			d, err := b.Dequeue(context.Background(), q2, c, 100*time.Millisecond)
			if err != nil || d != nil {
				t.Fatalf("Dequeue other queue = %v, %v", d, err)
			}
			if has, _ := b.HasJob(context.Background(), q2, HasID(id)); has {
				t.Fatal("HasJob sees another queue's job")
			}
			wantStats(t, b, q2, queue.Stats{})
			wantStats(t, b, q1, queue.Stats{Pending: 1})
		}},
		{"Validation", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := context.Background()
			wantCode(t, b.Enqueue(ctx, "bad name{", queue.NewMessage(time.Now(), nil)), redstate.EINVALID)
			wantCode(t, b.Enqueue(ctx, q, queue.Message{RetryCount: -1}), redstate.EINVALID)
			wantCode(t, b.Enqueue(ctx, q, queue.Message{Payload: json.RawMessage("{bad")}), redstate.EINVALID)
			wantCode(t, b.EnqueueRaw(ctx, q, ""), redstate.EINVALID)
			_, err := b.Dequeue(ctx, q, "bad id{", time.Second)
			wantCode(t, err, redstate.EINVALID)
			_, err = b.Dequeue(ctx, q, c, 0)
			wantCode(t, err, redstate.EINVALID)
			wantCode(t, b.Heartbeat(ctx, q, c, 0), redstate.EINVALID)
			_, err = b.PromoteDue(ctx, q, time.Now(), 0)
			wantCode(t, err, redstate.EINVALID)
			_, err = b.DeadLetters(ctx, q, -1, 10)
			wantCode(t, err, redstate.EINVALID)
			_, err = b.DeadLetters(ctx, q, 0, queue.MaxListCount+1)
			wantCode(t, err, redstate.EINVALID)
			_, err = b.HasJob(ctx, q, nil)
			wantCode(t, err, redstate.EINVALID)
			wantCode(t, b.Ack(ctx, nil), redstate.EINVALID)
		}},
	}
}

// equalMessage compares messages field by field (times with Equal, payloads and members as
// bytes).
func equalMessage(a, b queue.Message) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for k, v := range a.Fields {
		if string(b.Fields[k]) != string(v) {
			return false
		}
	}
	return a.RetryCount == b.RetryCount && a.EnqueueTime.Equal(b.EnqueueTime) &&
		string(a.Payload) == string(b.Payload) && a.JobID == b.JobID
}

// EqualMessage tells whether two messages are equivalent (times compared as instants).
func EqualMessage(a, b queue.Message) bool { return equalMessage(a, b) }
