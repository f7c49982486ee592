package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

func (s brokerSuite) deadTests() []NamedTest {
	bury := func(t *testing.T, b queue.Broker, q, c string, n int) []queue.Message {
		t.Helper()
		var ms []queue.Message
		for _, id := range NewIDs(n) {
			m := mustEnqueue(t, b, q, id)
			d := mustDequeue(t, b, q, c)
			if err := b.Bury(context.Background(), d, d.Message); err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		return ms
	}
	return []NamedTest{
		{"InspectNewestFirstPaged", func(t *testing.T) {
			b, q, c := s.setup(t)
			ms := bury(t, b, q, c, 3)
			dl, err := b.DeadLetters(context.Background(), q, 1, 5)
			if err != nil || len(dl) != 2 {
				t.Fatalf("DeadLetters(1,5) = %d entries, %v", len(dl), err)
			}
			if IDOf(*dl[0].Message) != IDOf(ms[1]) || IDOf(*dl[1].Message) != IDOf(ms[0]) {
				t.Fatalf("dead letters not newest first: %+v", dl)
			}
			dl, err = b.DeadLetters(context.Background(), q, 10, 5)
			if err != nil || len(dl) != 0 {
				t.Fatalf("DeadLetters past the end = %+v, %v", dl, err)
			}
		}},
		{"RequeueOne", func(t *testing.T) {
			b, q, c := s.setup(t)
			ms := bury(t, b, q, c, 2)
			dl, _ := b.DeadLetters(context.Background(), q, 0, 10)
			if err := b.RequeueDead(context.Background(), q, dl[1].Raw); err != nil {
				t.Fatal(err)
			}
			wantStats(t, b, q, queue.Stats{Pending: 1, Dead: 1})
			if d := mustDequeue(t, b, q, c); d.Raw != dl[1].Raw || !equalMessage(d.Message, ms[0]) {
				t.Fatalf("requeued delivery = %+v", d)
			}
			wantCode(t, b.RequeueDead(context.Background(), q, dl[1].Raw), redstate.ENOTFOUND)
		}},
		{"RequeueAllOldestFirst", func(t *testing.T) {
			b, q, c := s.setup(t)
			ms := bury(t, b, q, c, 3)
			if n, err := b.RequeueAllDead(context.Background(), q); err != nil || n != 3 {
				t.Fatalf("RequeueAllDead = %d, %v", n, err)
			}
			for _, m := range ms {
				if d := mustDequeue(t, b, q, c); IDOf(d.Message) != IDOf(m) {
					t.Fatalf("requeue order: got %d, want %d", IDOf(d.Message), IDOf(m))
				}
			}
			wantStats(t, b, q, queue.Stats{Running: 3})
		}},
		{"Purge", func(t *testing.T) {
			b, q, c := s.setup(t)
			bury(t, b, q, c, 2)
			if n, err := b.PurgeDead(context.Background(), q); err != nil || n != 2 {
				t.Fatalf("PurgeDead = %d, %v", n, err)
			}
			wantStats(t, b, q, queue.Stats{})
			if n, err := b.PurgeDead(context.Background(), q); err != nil || n != 0 {
				t.Fatalf("PurgeDead on empty = %d, %v", n, err)
			}
		}},
	}
}

func (s brokerSuite) inspectTests() []NamedTest {
	return []NamedTest{
		{"HasJobEveryLivePlace", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := context.Background()
			ids := NewIDs(5) // pending, in-flight, retrying, dead, absent
			mustEnqueue(t, b, q, ids[1])
			mustEnqueue(t, b, q, ids[2])
			mustEnqueue(t, b, q, ids[3])
			dFlight := mustDequeue(t, b, q, c)
			dRetry := mustDequeue(t, b, q, c)
			dDead := mustDequeue(t, b, q, c)
			if err := b.Retry(ctx, dRetry, dRetry.Message.NextRetry(), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := b.Bury(ctx, dDead, dDead.Message); err != nil {
				t.Fatal(err)
			}
			mustEnqueue(t, b, q, ids[0])
			if err := b.EnqueueRaw(ctx, q, "garbage"); err != nil {
				t.Fatal(err)
			}
			want := map[int64]bool{ids[0]: true, IDOf(dFlight.Message): true, IDOf(dRetry.Message): true, IDOf(dDead.Message): false, ids[4]: false}
			for id, w := range want {
				got, err := b.HasJob(ctx, q, HasID(id))
				if err != nil || got != w {
					t.Fatalf("HasJob(%d) = %v, %v; want %v", id, got, err, w)
				}
			}
			wantStats(t, b, q, queue.Stats{Pending: 2, Running: 1, Retrying: 1, Dead: 1})
		}},
	}
}
