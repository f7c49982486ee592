package queuetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
)

// NewPoolOfTwo returns a pool (queue.NewPool) serving cfg's queue and an empty sibling queue
// (cfg.Queue + ":sibling") of twice its weight, with cfg's pool-wide settings and
// cfg.BlockTimeout as the pool's. The sibling is the pool's first queue, so while both are
// empty the pool blocks on the sibling and sees cfg's queue once per BlockTimeout: every test
// of the Worker suite run on it checks that a pool keeps the Worker's guarantees.
func NewPoolOfTwo(b queue.Broker, h queue.Handler, cfg queue.WorkerSettings) (*queue.Worker, error) {
	pool := queue.PoolSettings{ConsumerID: cfg.ConsumerID, Concurrency: cfg.Concurrency, Prefetch: cfg.Prefetch, NoPrefetch: cfg.NoPrefetch,
		BlockTimeout: cfg.BlockTimeout, ShutdownTimeout: cfg.ShutdownTimeout, Logger: cfg.Logger}
	own := cfg
	own.ConsumerID, own.Concurrency, own.Prefetch, own.NoPrefetch, own.ShutdownTimeout = "", 0, 0, false, 0
	sibling := own
	sibling.Queue = cfg.Queue + ":sibling"
	return queue.NewPool(b, pool, queue.PoolQueue{Settings: own, Handler: h, Weight: 1}, queue.PoolQueue{Settings: sibling, Handler: h, Weight: 2})
}

// poolFixture is a pool under test: its queues (named after the test) and the order in which
// its handlers started jobs.
type poolFixture struct {
	b      queue.Broker
	queues []string // in the order given to NewPool
	mu     sync.Mutex
	starts []string // the queue of each job started, in start order
	done   map[string]int
}

// newPoolFixture returns n fresh queue names on b.
func newPoolFixture(b queue.Broker, n int) *poolFixture {
	f := &poolFixture{b: b, done: map[string]int{}}
	for range n {
		f.queues = append(f.queues, NewQueueName())
	}
	return f
}

// handler records each start and completion.
func (f *poolFixture) handler(context.Context, *queue.Delivery) error { return nil }

// start runs a pool of f's queues with weights (in the order of f.queues) under pool (a
// fast BlockTimeout by default) and handler h wrapped to record starts and completions.
func (f *poolFixture) start(t *testing.T, pool queue.PoolSettings, weights []int, h queue.Handler) (stop func()) {
	t.Helper()
	if pool.BlockTimeout == 0 {
		pool.BlockTimeout = 100 * time.Millisecond
	}
	if pool.ShutdownTimeout == 0 {
		pool.ShutdownTimeout = 5 * time.Second
	}
	if pool.Logger == nil {
		pool.Logger = FastConfig("x").Logger
	}
	if h == nil {
		h = f.handler
	}
	var qs []queue.PoolQueue
	for i, q := range f.queues {
		s := FastConfig(q)
		s.ShutdownTimeout, s.Logger = 0, nil
		qs = append(qs, queue.PoolQueue{Settings: s, Weight: weights[i], Handler: func(ctx context.Context, d *queue.Delivery) error {
			f.mu.Lock()
			f.starts = append(f.starts, d.Queue)
			f.mu.Unlock()
			err := h(ctx, d)
			f.mu.Lock()
			f.done[d.Queue]++
			f.mu.Unlock()
			return err
		}})
	}
	w, err := queue.NewPool(f.b, pool, qs...)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	return startWorker(t, w)
}

// fillQueue enqueues n jobs on q.
func (f *poolFixture) fillQueue(t *testing.T, q string, n int) {
	t.Helper()
	for _, id := range NewIDs(n) {
		mustEnqueue(t, f.b, q, id)
	}
}

// handled returns how many jobs of q finished.
func (f *poolFixture) handled(q string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done[q]
}

// startOrder returns the queues of the started jobs, in start order.
func (f *poolFixture) startOrder() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.starts)
}

// awaitHandled waits until each queue of f has handled want[i] jobs.
func (f *poolFixture) awaitHandled(t *testing.T, want ...int) {
	t.Helper()
	eventually(t, "the pool's jobs handled", func() bool {
		for i, q := range f.queues {
			if f.handled(q) < want[i] {
				return false
			}
		}
		return true
	})
}

// poolTests are the pool's own tests (priorities, pause, crash); the Worker suite runs on a
// pool as well (NewPoolOfTwo).
func poolTests(newBroker NewBroker) []NamedTest {
	return []NamedTest{
		{"StrictRunsEveryHigherJobFirst", func(t *testing.T) {
			// Filled before the pool starts: every job of a higher queue starts before any
			// job of a lower one. One handler, so the start order is the dequeue order.
			const n = 20
			f := newPoolFixture(newBroker(t), 3) // low, high, middle: the order given does not matter
			low, high, middle := f.queues[0], f.queues[1], f.queues[2]
			for _, q := range f.queues {
				f.fillQueue(t, q, n)
			}
			f.start(t, queue.PoolSettings{Strict: true, Concurrency: 1, Prefetch: 3}, []int{1, 9, 5}, nil)
			f.awaitHandled(t, n, n, n)
			order := f.startOrder()
			want := slices.Concat(slices.Repeat([]string{high}, n), slices.Repeat([]string{middle}, n), slices.Repeat([]string{low}, n))
			if !slices.Equal(order, want) {
				t.Fatalf("start order %v,\nwant every high job, then every middle one, then every low one", order)
			}
		}},
		{"StrictWithConcurrencyTakesLowerJobsOnlyWhenHigherAreEmpty", func(t *testing.T) {
			// Four handlers: which of two popped jobs records its start first is a race, so
			// the test checks the property itself: when a low job starts, no high job is
			// pending any more (the pool took the low one only after finding high empty).
			const n, c = 40, 4
			f := newPoolFixture(newBroker(t), 2)
			high, low := f.queues[0], f.queues[1]
			f.fillQueue(t, low, n)
			f.fillQueue(t, high, n)
			var mu sync.Mutex
			var pendingAtLowStart []int64
			f.start(t, queue.PoolSettings{Strict: true, Concurrency: c}, []int{2, 1}, func(_ context.Context, d *queue.Delivery) error {
				if d.Queue == low {
					st, err := f.b.Stats(context.Background(), high)
					if err != nil {
						return err
					}
					mu.Lock()
					pendingAtLowStart = append(pendingAtLowStart, st.Pending)
					mu.Unlock()
				}
				return nil
			})
			f.awaitHandled(t, n, n)
			mu.Lock()
			defer mu.Unlock()
			if len(pendingAtLowStart) != n || slices.Max(pendingAtLowStart) != 0 {
				t.Fatalf("high jobs pending as each low job started: %v; want %d zeros", pendingAtLowStart, n)
			}
		}},
		{"WeightedSharesByWeight", func(t *testing.T) {
			// Both queues hold more jobs than the first n starts take: the weight-6 queue gets
			// 6/7 of them. The pool's shares are deterministic (smooth weighted round robin,
			// within a job of the share per pick); the tolerance covers the order inside one
			// dequeue round and the handlers' start races.
			const n = 420
			f := newPoolFixture(newBroker(t), 2)
			heavy := f.queues[0]
			f.fillQueue(t, heavy, n)
			f.fillQueue(t, f.queues[1], n)
			f.start(t, queue.PoolSettings{Concurrency: 4}, []int{6, 1}, nil)
			f.awaitHandled(t, n, n)
			first := f.startOrder()[:n]
			got := 0
			for _, q := range first {
				if q == heavy {
					got++
				}
			}
			if want, tol := n*6/7, n/20; got < want-tol || got > want+tol {
				t.Fatalf("the weight-6 queue had %d of the first %d starts, want %d±%d", got, n, want, tol)
			}
		}},
		{"EmptyHigherQueueDoesNotStarveLower", func(t *testing.T) {
			for _, strict := range []bool{false, true} {
				// The heavier (or higher) queue stays empty: the lower one's jobs run, those
				// queued before the start and those arriving while the pool idles (blocked on
				// the empty queue for its BlockTimeout).
				f := newPoolFixture(newBroker(t), 2)
				low := f.queues[1]
				f.fillQueue(t, low, 10)
				stop := f.start(t, queue.PoolSettings{Strict: strict, Concurrency: 2}, []int{5, 1}, nil)
				f.awaitHandled(t, 0, 10)
				f.fillQueue(t, low, 10)
				f.awaitHandled(t, 0, 20)
				stop()
			}
		}},
		{"PauseStopsOnlyThatQueue", func(t *testing.T) {
			// The highest queue of a strict pool is paused with jobs pending: the pool runs
			// the lower queue's jobs and none of the paused one's, which run once resumed.
			const n = 10
			f := newPoolFixture(newBroker(t), 2)
			high, low := f.queues[0], f.queues[1]
			ctx := ctxT(t)
			if err := f.b.Pause(ctx, high); err != nil {
				t.Fatal(err)
			}
			f.fillQueue(t, high, n)
			f.fillQueue(t, low, n)
			f.start(t, queue.PoolSettings{Strict: true, Concurrency: 2}, []int{2, 1}, nil)
			f.awaitHandled(t, 0, n)
			if got := f.handled(high); got != 0 {
				t.Fatalf("the paused queue ran %d jobs", got)
			}
			if st := mustStats(t, f.b, high); st.Pending != n {
				t.Fatalf("paused queue stats %+v, want its %d jobs pending", st, n)
			}
			if err := f.b.Resume(ctx, high); err != nil {
				t.Fatal(err)
			}
			f.awaitHandled(t, n, n)
			eventually(t, "both queues empty", func() bool {
				return mustStats(t, f.b, high) == queue.Stats{} && mustStats(t, f.b, low) == queue.Stats{}
			})
		}},
		{"CrashedConsumerJobsRedeliveredOnEachQueue", func(t *testing.T) {
			// A consumer holds a job of each queue and dies (no heartbeat, no ack): once its
			// lease lapses the pool recovers both jobs, each on its own queue, and runs them.
			f := newPoolFixture(newBroker(t), 2)
			ctx := ctxT(t)
			for _, q := range f.queues {
				if err := f.b.Heartbeat(ctx, q, "crashed", 200*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				mustEnqueue(t, f.b, q, NewIDs(1)[0])
				mustDequeue(t, f.b, q, "crashed")
			}
			f.start(t, queue.PoolSettings{Concurrency: 2}, []int{3, 1}, nil)
			f.awaitHandled(t, 1, 1)
			for _, q := range f.queues {
				eventually(t, "the recovered job acked", func() bool { return mustStats(t, f.b, q) == queue.Stats{} })
			}
		}},
	}
}
