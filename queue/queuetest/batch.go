package queuetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// mustDequeueBatch takes up to max jobs, failing the test on an error or when none arrives
// within a second.
func mustDequeueBatch(t *testing.T, b queue.Broker, q, consumer string, max int) []*queue.Delivery {
	t.Helper()
	ds, err := b.DequeueBatch(context.Background(), q, consumer, max, time.Second)
	if err != nil {
		t.Fatalf("DequeueBatch: %v", err)
	}
	if len(ds) == 0 {
		t.Fatalf("DequeueBatch: no job within 1s")
	}
	return ds
}

// wantIDs fails unless ds carry exactly ids, in order, for queue q and consumer c.
func wantIDs(t *testing.T, ds []*queue.Delivery, q, c string, ids []int64) {
	t.Helper()
	if len(ds) != len(ids) {
		t.Fatalf("got %d deliveries, want %d", len(ds), len(ids))
	}
	for i, d := range ds {
		if d.DecodeErr != nil || IDOf(d.Message) != ids[i] {
			t.Fatalf("delivery %d: id %d (err %v), want %d", i, IDOf(d.Message), d.DecodeErr, ids[i])
		}
		if d.Queue != q || d.ConsumerID != c {
			t.Fatalf("delivery %d queue/consumer = %q/%q, want %q/%q", i, d.Queue, d.ConsumerID, q, c)
		}
	}
}

// batchTests cover DequeueBatch (prefetch), Release and AckBatch.
func (s brokerSuite) batchTests() []NamedTest {
	return []NamedTest{
		{"DequeueBatchOrderAndMax", func(t *testing.T) {
			b, q, c := s.setup(t)
			ids := NewIDs(5)
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			wantIDs(t, mustDequeueBatch(t, b, q, c, 3), q, c, ids[:3])
			wantStats(t, b, q, queue.Stats{Pending: 2, Running: 3})
			// Fewer pending than max: all of them, without waiting.
			start := time.Now()
			wantIDs(t, mustDequeueBatch(t, b, q, c, 10), q, c, ids[3:])
			if el := time.Since(start); el > 500*time.Millisecond {
				t.Fatalf("DequeueBatch with jobs pending took %v", el)
			}
			wantStats(t, b, q, queue.Stats{Running: 5})
		}},
		{"DequeueBatchBlocksWhenEmpty", func(t *testing.T) {
			b, q, c := s.setup(t)
			start := time.Now()
			ds, err := b.DequeueBatch(context.Background(), q, c, 4, 200*time.Millisecond)
			if err != nil || ds != nil {
				t.Fatalf("DequeueBatch on empty queue = %v, %v; want nil, nil", ds, err)
			}
			if el := time.Since(start); el < 150*time.Millisecond {
				t.Fatalf("DequeueBatch returned after %v, before its timeout", el)
			}
			id := NewIDs(1)[0]
			got := make(chan []*queue.Delivery, 1)
			go func() {
				ds, _ := b.DequeueBatch(context.Background(), q, c, 4, 5*time.Second)
				got <- ds
			}()
			time.Sleep(50 * time.Millisecond)
			mustEnqueue(t, b, q, id)
			select {
			case ds := <-got:
				wantIDs(t, ds, q, c, []int64{id})
			case <-time.After(waitFor):
				t.Fatal("DequeueBatch did not wake on enqueue")
			}
			wantStats(t, b, q, queue.Stats{Running: 1})
		}},
		{"DequeueBatchHonoursContext", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			ds, err := b.DequeueBatch(ctx, q, c, 3, 10*time.Second)
			if ds != nil || err == nil {
				t.Fatalf("DequeueBatch with ended ctx = %v, %v; want an error", ds, err)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatal("DequeueBatch ignored its ctx")
			}
		}},
		{"DequeueBatchRequiresLease", func(t *testing.T) {
			b := s.newBroker(t)
			q := NewQueueName()
			mustEnqueue(t, b, q, NewIDs(1)[0])
			mustEnqueue(t, b, q, NewIDs(1)[0])
			_, err := b.DequeueBatch(context.Background(), q, "nolease", 5, 100*time.Millisecond)
			wantCode(t, err, redstate.ECONFLICT)
			wantStats(t, b, q, queue.Stats{Pending: 2})
		}},
		{"DequeueBatchValidation", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := context.Background()
			_, err := b.DequeueBatch(ctx, q, c, 0, time.Second)
			wantCode(t, err, redstate.EINVALID)
			_, err = b.DequeueBatch(ctx, q, c, 1, 0)
			wantCode(t, err, redstate.EINVALID)
			_, err = b.DequeueBatch(ctx, q, "bad id{", 1, time.Second)
			wantCode(t, err, redstate.EINVALID)
			_, err = b.Release(ctx, []*queue.Delivery{nil})
			wantCode(t, err, redstate.EINVALID)
			_, err = b.Release(ctx, []*queue.Delivery{
				{Queue: q, ConsumerID: c, Raw: "x"}, {Queue: q, ConsumerID: "other", Raw: "y"},
			})
			wantCode(t, err, redstate.EINVALID)
			if n, err := b.Release(ctx, nil); n != 0 || err != nil {
				t.Fatalf("Release(nil) = %d, %v", n, err)
			}
		}},
		{"DequeueBatchRecoveredOnLeaseExpiry", func(t *testing.T) {
			b := s.newBroker(t)
			q := NewQueueName()
			ctx := context.Background()
			if err := b.Heartbeat(ctx, q, "dying", 300*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			ids := NewIDs(4)
			for _, id := range ids[:3] {
				mustEnqueue(t, b, q, id)
			}
			// The dying consumer prefetches three jobs and starts none.
			wantIDs(t, mustDequeueBatch(t, b, q, "dying", 3), q, "dying", ids[:3])
			mustEnqueue(t, b, q, ids[3])
			eventually(t, "lease expiry", func() bool {
				n, err := b.RecoverExpired(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				return n == 3
			})
			wantStats(t, b, q, queue.Stats{Pending: 4})
			// Recovered in their original order, ahead of the job enqueued after them.
			mustLease(t, b, q, "alive")
			wantIDs(t, mustDequeueBatch(t, b, q, "alive", 10), q, "alive", ids)
		}},
		{"ReleaseRestoresHeadInOrder", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := context.Background()
			ids := NewIDs(6)
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			ds := mustDequeueBatch(t, b, q, c, 4)
			wantIDs(t, ds, q, c, ids[:4])
			// ds[0] ran and was acked; ds[1..3] were never started. One of them has meanwhile
			// been taken out of flight (as a recovery would): it is skipped.
			if err := b.Ack(ctx, ds[0]); err != nil {
				t.Fatal(err)
			}
			if err := b.Ack(ctx, ds[2]); err != nil {
				t.Fatal(err)
			}
			n, err := b.Release(ctx, ds[1:])
			if err != nil || n != 2 {
				t.Fatalf("Release = %d, %v; want 2, nil", n, err)
			}
			wantStats(t, b, q, queue.Stats{Pending: 4})
			// Released jobs come first, in their order, then the rest.
			mustLease(t, b, q, "other")
			want := []int64{ids[1], ids[3], ids[4], ids[5]}
			wantIDs(t, mustDequeueBatch(t, b, q, "other", 10), q, "other", want)
			wantCode(t, b.Ack(ctx, ds[1]), redstate.ECONFLICT)
		}},
		{"AckBatch", func(t *testing.T) {
			b, q, c := s.setup(t)
			ctx := context.Background()
			for _, id := range NewIDs(4) {
				mustEnqueue(t, b, q, id)
			}
			ds := mustDequeueBatch(t, b, q, c, 4)
			if err := b.Ack(ctx, ds[1]); err != nil {
				t.Fatal(err)
			}
			errs := b.AckBatch(ctx, []*queue.Delivery{ds[3], ds[1], nil, ds[0]})
			if len(errs) != 4 {
				t.Fatalf("AckBatch returned %d errors, want 4", len(errs))
			}
			if errs[0] != nil || errs[3] != nil {
				t.Fatalf("AckBatch errs = %v; want nil for in-flight deliveries", errs)
			}
			wantCode(t, errs[1], redstate.ECONFLICT)
			wantCode(t, errs[2], redstate.EINVALID)
			wantStats(t, b, q, queue.Stats{Running: 1})
			if errs := b.AckBatch(ctx, ds[2:3]); len(errs) != 1 || errs[0] != nil {
				t.Fatalf("AckBatch of one = %v", errs)
			}
			wantStats(t, b, q, queue.Stats{})
		}},
	}
}

// prefetchWorkerTests cover the Worker's prefetching dispatcher and coalesced acks.
func prefetchWorkerTests(newBroker NewBroker, newWorker func(*testing.T, queue.Broker, queue.Handler, queue.WorkerSettings) *queue.Worker) []NamedTest {
	ctx := context.Background()
	return []NamedTest{
		{"PrefetchKeepsFIFO", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			ids := NewIDs(20)
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			var mu sync.Mutex
			var seen []int64
			cfg := FastConfig(q)
			cfg.Prefetch = 5 // Concurrency 1: serial, so handling order is dequeue order
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error {
				mu.Lock()
				seen = append(seen, IDOf(d.Message))
				mu.Unlock()
				return nil
			}, cfg)
			startWorker(t, w)
			eventually(t, "all acked", func() bool { return mustStats(t, b, q) == queue.Stats{} })
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != len(ids) {
				t.Fatalf("handled %d jobs, want %d", len(seen), len(ids))
			}
			for i := range ids {
				if seen[i] != ids[i] {
					t.Fatalf("handled %v, want FIFO %v", seen, ids)
				}
			}
		}},
		{"PrefetchBounded", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			for _, id := range NewIDs(30) {
				mustEnqueue(t, b, q, id)
			}
			release := make(chan struct{})
			var started atomic.Int32
			cfg := FastConfig(q)
			cfg.Concurrency = 2
			cfg.Prefetch = 3
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error {
				started.Add(1)
				<-release
				return nil
			}, cfg)
			startWorker(t, w)
			eventually(t, "handlers busy, prefetch full", func() bool {
				return started.Load() == 2 && mustStats(t, b, q).Running == 5
			})
			time.Sleep(100 * time.Millisecond) // nothing more is taken while the handlers are busy
			if st := mustStats(t, b, q); st != (queue.Stats{Pending: 25, Running: 5}) {
				t.Fatalf("Stats = %+v, want 2 running + 3 prefetched of 30", st)
			}
			close(release)
			eventually(t, "all acked", func() bool { return mustStats(t, b, q) == queue.Stats{} })
		}},
		{"NoPrefetchTakesOnlyForIdleHandlers", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			for _, id := range NewIDs(5) {
				mustEnqueue(t, b, q, id)
			}
			release := make(chan struct{})
			cfg := FastConfig(q)
			cfg.Concurrency = 2
			cfg.NoPrefetch = true
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error { <-release; return nil }, cfg)
			startWorker(t, w)
			eventually(t, "handlers busy", func() bool { return mustStats(t, b, q).Running == 2 })
			time.Sleep(100 * time.Millisecond)
			if st := mustStats(t, b, q); st != (queue.Stats{Pending: 3, Running: 2}) {
				t.Fatalf("Stats = %+v, want 2 running, 3 pending", st)
			}
			close(release)
			eventually(t, "all acked", func() bool { return mustStats(t, b, q) == queue.Stats{} })
		}},
		{"GracefulShutdownReleasesPrefetchedInOrder", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			ids := NewIDs(10)
			for _, id := range ids {
				mustEnqueue(t, b, q, id)
			}
			started, release := make(chan int64, 10), make(chan struct{})
			cfg := FastConfig(q)
			cfg.Concurrency = 2
			cfg.Prefetch = 4
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error {
				started <- IDOf(d.Message)
				<-release
				return nil
			}, cfg)
			stop := startWorker(t, w)
			ran := map[int64]bool{<-started: true, <-started: true}
			eventually(t, "prefetch full", func() bool { return mustStats(t, b, q).Running == 6 })
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			// The prefetched jobs go back while the running ones finish.
			eventually(t, "prefetched jobs released", func() bool { return mustStats(t, b, q).Running == 2 })
			close(release)
			<-stopped
			if len(started) != 0 {
				t.Fatalf("a prefetched job was started after shutdown began")
			}
			wantStats(t, b, q, queue.Stats{Pending: 8})
			// Nothing lost, nothing reordered: the pending list is the original order minus the
			// two jobs that ran.
			var want []int64
			for _, id := range ids {
				if !ran[id] {
					want = append(want, id)
				}
			}
			mustLease(t, b, q, "check")
			wantIDs(t, mustDequeueBatch(t, b, q, "check", 10), q, "check", want)
		}},
		{"CoalescedAcksUnderConcurrency", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			const n = 300
			var handled atomic.Int32
			var acked atomic.Int32
			cfg := FastConfig(q)
			cfg.Concurrency = 8
			cfg.Observer = observerFunc(func(_, outcome string, _ time.Duration) {
				if outcome == queue.OutcomeAcked {
					acked.Add(1)
				}
			})
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error { handled.Add(1); return nil }, cfg)
			startWorker(t, w)
			for _, id := range NewIDs(n) {
				if err := b.Enqueue(ctx, q, Message(id)); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "all acked", func() bool { return acked.Load() == n })
			// An ack is answered only once the broker applied it.
			wantStats(t, b, q, queue.Stats{})
			if h := handled.Load(); h != n {
				t.Fatalf("handled %d jobs, want %d", h, n)
			}
		}},
	}
}

// observerFunc adapts a function to queue.Observer.
type observerFunc func(queue, outcome string, d time.Duration)

func (f observerFunc) ObserveJob(q, outcome string, d time.Duration) { f(q, outcome, d) }
