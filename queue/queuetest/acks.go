package queuetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
)

// gatedAcks is a Broker whose acks reach the broker only once the gate is opened: until then
// every Ack and AckBatch call waits (or returns ctx's error when ctx ends first).
type gatedAcks struct {
	queue.Broker
	open chan struct{}
	once sync.Once
}

// openGate lets the acks through (once; later calls do nothing).
func (g *gatedAcks) openGate() { g.once.Do(func() { close(g.open) }) }

// Ack implements queue.Broker, waiting for the gate.
func (g *gatedAcks) Ack(ctx context.Context, d *queue.Delivery) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Broker.Ack(ctx, d)
}

// AckBatch implements queue.Broker, waiting for the gate.
func (g *gatedAcks) AckBatch(ctx context.Context, ds []*queue.Delivery) []error {
	select {
	case <-g.open:
	case <-ctx.Done():
		errs := make([]error, len(ds))
		for i := range errs {
			errs[i] = ctx.Err()
		}
		return errs
	}
	return g.Broker.AckBatch(ctx, ds)
}

// ackWorkerTests check that a Worker with Concurrency > 1 acks in the background: its handlers
// take the next job while acks are unanswered, an ack is reported only once answered, nothing
// is fetched while Concurrency+Prefetch acks are unanswered (so at most twice that many are: the
// jobs held then may still be handled), and Run returns only once every ack is.
func ackWorkerTests(newBroker NewBroker, newWorker func(*testing.T, queue.Broker, queue.Handler, queue.WorkerSettings) *queue.Worker) []NamedTest {
	// setup starts a worker of Concurrency 2 and Prefetch 2 with its acks held at the gate on a
	// queue of n jobs; it returns the gate, the queue, how many handler calls and acked
	// outcomes there were, and the worker's stop.
	setup := func(t *testing.T, n int) (g *gatedAcks, q string, handled, acked *atomic.Int32, stop func()) {
		g, q = &gatedAcks{Broker: newBroker(t), open: make(chan struct{})}, NewQueueName()
		handled, acked = new(atomic.Int32), new(atomic.Int32)
		for _, id := range NewIDs(n) {
			mustEnqueue(t, g, q, id)
		}
		cfg := FastConfig(q)
		cfg.Concurrency, cfg.Prefetch = 2, 2
		cfg.BlockTimeout = waitFor // an ack waits at the gate for up to this long
		cfg.Observer = observerFunc(func(_, outcome string, _ time.Duration) {
			if outcome == queue.OutcomeAcked {
				acked.Add(1)
			}
		})
		w := newWorker(t, g, func(context.Context, *queue.Delivery) error {
			handled.Add(1)
			return nil
		}, cfg)
		stop = startWorker(t, w)
		t.Cleanup(g.openGate) // before stop: a failed test leaves no ack waiting
		return g, q, handled, acked, stop
	}
	return []NamedTest{
		{"HandlersDoNotWaitForAcks", func(t *testing.T) {
			const n = 12
			g, q, handled, acked, _ := setup(t, n)
			// Two handlers that waited for their acks would stop at two jobs.
			eventually(t, "four jobs handled with no ack answered", func() bool { return handled.Load() >= 4 })
			time.Sleep(100 * time.Millisecond) // the bound holds: nothing is taken beyond it
			if h, a := handled.Load(), acked.Load(); h > 8 || a != 0 {
				t.Fatalf("handled %d, acked %d with every ack held: want at most 8 handled (twice Concurrency+Prefetch) and none reported", h, a)
			}
			if st := mustStats(t, g, q); st.Pending < n-8 || st.Pending+st.Running != n {
				t.Fatalf("Stats = %+v with every ack held: want at most 8 of %d taken, none settled", st, n)
			}
			g.openGate()
			eventually(t, "all acked", func() bool { return acked.Load() == n && mustStats(t, g, q) == queue.Stats{} })
			if h := handled.Load(); h != n {
				t.Fatalf("handled %d jobs, want %d", h, n)
			}
		}},
		{"RunReturnsOnceAcksAreAnswered", func(t *testing.T) {
			g, q, handled, acked, stop := setup(t, 3)
			eventually(t, "three jobs handled", func() bool { return handled.Load() == 3 })
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			select {
			case <-stopped:
				t.Fatal("Run returned while acks were unanswered")
			case <-time.After(100 * time.Millisecond):
			}
			g.openGate()
			<-stopped
			if a := acked.Load(); a != 3 {
				t.Fatalf("%d acks reported after Run returned, want 3", a)
			}
			wantStats(t, g, q, queue.Stats{})
		}},
	}
}
