package queuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

func (s brokerSuite) settleTests() []NamedTest {
	return []NamedTest{
		{"AckRemoves", func(t *testing.T) {
			b, q, c := s.setup(t)
			mustEnqueue(t, b, q, NewIDs(1)[0])
			d := mustDequeue(t, b, q, c)
			if err := b.Ack(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			wantStats(t, b, q, queue.Stats{})
			wantCode(t, b.Ack(context.Background(), d), redstate.ECONFLICT)
		}},
		{"RetryWaitsUntilDue", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := context.Background()
			m := mustEnqueue(t, b, q, NewIDs(1)[0])
			d := mustDequeue(t, b, q, c)
			due := time.Now().Add(time.Hour)
			if err := b.Retry(ctx, d, m.NextRetry(), due); err != nil {
				t.Fatal(err)
			}
			wantStats(t, b, q, queue.Stats{Retrying: 1})
			if n, err := b.PromoteDue(ctx, q, due.Add(-time.Second), 10); err != nil || n != 0 {
				t.Fatalf("PromoteDue before due = %d, %v; want 0", n, err)
			}
			if n, err := b.PromoteDue(ctx, q, due, 10); err != nil || n != 1 {
				t.Fatalf("PromoteDue at due = %d, %v; want 1", n, err)
			}
			wantStats(t, b, q, queue.Stats{Pending: 1})
			d2 := mustDequeue(t, b, q, c)
			if !equalMessage(d2.Message, m.NextRetry()) {
				t.Fatalf("retried message = %+v, want %+v", d2.Message, m.NextRetry())
			}
		}},
		{"PromoteDueEarliestFirstWithLimit", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := context.Background()
			ids := NewIDs(3)
			base := time.Now()
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			// Schedule in reverse: the last id is due first.
			for i := range ids {
				d := mustDequeue(t, b, q, c)
				if err := b.Retry(ctx, d, d.Message.NextRetry(), base.Add(time.Duration(len(ids)-i)*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := b.PromoteDue(ctx, q, base.Add(time.Hour), 2); err != nil || n != 2 {
				t.Fatalf("PromoteDue limit 2 = %d, %v", n, err)
			}
			for _, want := range []int64{ids[2], ids[1]} {
				if d := mustDequeue(t, b, q, c); IDOf(d.Message) != want {
					t.Fatalf("promoted order: got %d, want %d", IDOf(d.Message), want)
				}
			}
			wantStats(t, b, q, queue.Stats{Running: 2, Retrying: 1})
		}},
		{"BuryMovesToDead", func(t *testing.T) {
			b, q, c := s.setup(t)
			m := mustEnqueue(t, b, q, NewIDs(1)[0])
			d := mustDequeue(t, b, q, c)
			if err := b.Bury(context.Background(), d, d.Message); err != nil {
				t.Fatal(err)
			}
			wantStats(t, b, q, queue.Stats{Dead: 1})
			dl, err := b.DeadLetters(context.Background(), q, 0, 10)
			if err != nil || len(dl) != 1 || dl[0].Message == nil || !equalMessage(*dl[0].Message, m) {
				t.Fatalf("DeadLetters = %+v, %v", dl, err)
			}
		}},
		{"SettleRequiresOwnership", func(t *testing.T) {
			b, q, c := s.setup(t)
			mustLease(t, b, q, "c2")
			mustEnqueue(t, b, q, NewIDs(1)[0])
			d := mustDequeue(t, b, q, c)
			other := *d
			other.ConsumerID = "c2"
			ctx := context.Background()
			wantCode(t, b.Ack(ctx, &other), redstate.ECONFLICT)
			wantCode(t, b.Retry(ctx, &other, d.Message.NextRetry(), time.Now()), redstate.ECONFLICT)
			wantCode(t, b.Bury(ctx, &other, d.Message), redstate.ECONFLICT)
			wantStats(t, b, q, queue.Stats{Running: 1})
		}},
	}
}

func (s brokerSuite) leaseTests() []NamedTest {
	return []NamedTest{
		{"InFlightListsTheConsumersJobsOldestFirst", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := ctxT(t)
			mustLease(t, b, q, "other")
			ids := NewIDs(4)
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			first := mustDequeue(t, b, q, c)
			mustDequeue(t, b, q, "other")
			third := mustDequeue(t, b, q, c)
			fourth := mustDequeue(t, b, q, c)
			if err := b.Ack(ctx, third); err != nil {
				t.Fatal(err)
			}
			got, err := b.InFlight(ctx, q, c)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].Raw != first.Raw || got[1].Raw != fourth.Raw {
				t.Fatalf("InFlight = %v, want the first and fourth job, oldest first", got)
			}
			for _, d := range got {
				if d.Queue != q || d.ConsumerID != c || d.DecodeErr != nil || IDOf(d.Message) == 0 {
					t.Fatalf("InFlight delivery %+v: want queue, consumer and decoded message", d)
				}
			}
			// Released back, a listed job is dequeued next.
			if n, err := b.Release(ctx, got[:1]); err != nil || n != 1 {
				t.Fatalf("Release of a listed job = %d, %v", n, err)
			}
			if d := mustDequeue(t, b, q, "other"); d.Raw != first.Raw {
				t.Fatalf("after Release dequeued %q, want %q", d.Raw, first.Raw)
			}
			if got, err := b.InFlight(ctx, q, "nobody"); err != nil || len(got) != 0 {
				t.Fatalf("InFlight of an unknown consumer = %v, %v; want none", got, err)
			}
			_, err = b.InFlight(ctx, q, "bad id!")
			wantCode(t, err, redstate.EINVALID)
			_, err = b.InFlight(ctx, "bad{name}", c)
			wantCode(t, err, redstate.EINVALID)
		}},
		{"RecoverExpiredRedelivers", func(t *testing.T) {
			b := s.newBroker(t)
			q := NewQueueName()
			ctx := context.Background()
			if err := b.Heartbeat(ctx, q, "dying", 300*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			mustLease(t, b, q, "alive")
			ids := NewIDs(3)
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			d := mustDequeue(t, b, q, "dying") // ids[0] in flight at a consumer that "dies"
			if IDOf(d.Message) != ids[0] {
				t.Fatalf("got %d", IDOf(d.Message))
			}
			mustEnqueue(t, b, q, NewIDs(1)[0])
			// A live consumer's jobs are never recovered.
			live := mustDequeue(t, b, q, "alive")
			if n, err := b.RecoverExpired(ctx, q); err != nil || n != 0 {
				t.Fatalf("RecoverExpired before expiry = %d, %v", n, err)
			}
			eventually(t, "lease expiry", func() bool {
				n, err := b.RecoverExpired(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				return n == 1
			})
			// The recovered job is next, ahead of jobs enqueued after it.
			if d2 := mustDequeue(t, b, q, "alive"); d2.Raw != d.Raw {
				t.Fatalf("after recovery dequeued %q, want the recovered %q", d2.Raw, d.Raw)
			}
			wantCode(t, b.Ack(ctx, d), redstate.ECONFLICT)
			if err := b.Ack(ctx, live); err != nil {
				t.Fatal(err)
			}
			// The dead consumer must heartbeat again before it may dequeue.
			_, err := b.Dequeue(ctx, q, "dying", 100*time.Millisecond)
			wantCode(t, err, redstate.ECONFLICT)
		}},
		{"HeartbeatKeepsLease", func(t *testing.T) {
			b := s.newBroker(t)
			q := NewQueueName()
			ctx := context.Background()
			lease := 400 * time.Millisecond
			if err := b.Heartbeat(ctx, q, "c", lease); err != nil {
				t.Fatal(err)
			}
			mustEnqueue(t, b, q, NewIDs(1)[0])
			mustDequeue(t, b, q, "c")
			for range 6 {
				time.Sleep(lease / 4)
				if err := b.Heartbeat(ctx, q, "c", lease); err != nil {
					t.Fatal(err)
				}
				if n, err := b.RecoverExpired(ctx, q); err != nil || n != 0 {
					t.Fatalf("RecoverExpired on a heartbeating consumer = %d, %v", n, err)
				}
			}
		}},
		{"ConcurrentConsumersNoDuplicates", func(t *testing.T) {
			b := s.newBroker(t)
			q := NewQueueName()
			const jobs, consumers = 60, 6
			ids := NewIDs(jobs)
			for i := range consumers {
				mustLease(t, b, q, fmt.Sprintf("c%d", i))
			}
			got := make(chan *queue.Delivery, jobs*2)
			errs := make(chan error, consumers)
			for i := range consumers {
				go func() {
					c := fmt.Sprintf("c%d", i)
					for {
						d, err := b.Dequeue(context.Background(), q, c, 300*time.Millisecond)
						if err != nil || d == nil {
							errs <- err
							return
						}
						got <- d
					}
				}()
			}
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			for range consumers {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			close(got)
			seen := map[int64]bool{}
			for d := range got {
				if seen[IDOf(d.Message)] {
					t.Fatalf("job %d delivered twice", IDOf(d.Message))
				}
				seen[IDOf(d.Message)] = true
			}
			if len(seen) != jobs {
				t.Fatalf("delivered %d distinct jobs, want %d", len(seen), jobs)
			}
			wantStats(t, b, q, queue.Stats{Running: jobs})
		}},
	}
}
