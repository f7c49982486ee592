package queue_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// TestNewPool_RefusesBadQueues: every misuse of NewPool is EINVALID, naming the queue.
func TestNewPool_RefusesBadQueues(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	h := func(context.Context, *queue.Delivery) error { return nil }
	q := func(name string, weight int) queue.PoolQueue {
		return queue.PoolQueue{Settings: queue.WorkerSettings{Queue: name}, Handler: h, Weight: weight}
	}
	withConcurrency := q("b", 1)
	withConcurrency.Settings.Concurrency = 2
	noHandler := q("b", 1)
	noHandler.Handler = nil
	for _, tc := range []struct {
		name   string
		pool   queue.PoolSettings
		queues []queue.PoolQueue
		want   string
	}{
		{"no queue", queue.PoolSettings{}, nil, "no queue"},
		{"weight 0", queue.PoolSettings{}, []queue.PoolQueue{q("a", 1), q("b", 0)}, `queue "b" has weight 0`},
		{"twice", queue.PoolSettings{}, []queue.PoolQueue{q("a", 1), q("a", 2)}, `queue "a" is given twice`},
		{"no handler", queue.PoolSettings{}, []queue.PoolQueue{q("a", 1), noHandler}, `queue "b" has no handler`},
		{"pool-wide setting on a queue", queue.PoolSettings{}, []queue.PoolQueue{q("a", 1), withConcurrency}, "set it on the pool"},
		{"equal priorities", queue.PoolSettings{Strict: true}, []queue.PoolQueue{q("a", 2), q("b", 2)}, "same priority 2"},
		{"bad queue name", queue.PoolSettings{}, []queue.PoolQueue{q("a b", 1)}, "queue name"},
		{"bad concurrency", queue.PoolSettings{Concurrency: -1}, []queue.PoolQueue{q("a", 1)}, "Concurrency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := queue.NewPool(b, tc.pool, tc.queues...)
			if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewPool = %v, want EINVALID with %q", err, tc.want)
			}
		})
	}
	if _, err := queue.NewPool(b, queue.PoolSettings{Strict: true}, q("a", 2), q("b", 1)); err != nil {
		t.Fatalf("a valid strict pool: %v", err)
	}
}

// dequeueCalls is a broker that counts DequeueBatch calls and tells when one with a given
// timeout is under way.
type dequeueCalls struct {
	queue.Broker
	calls atomic.Int64
	long  time.Duration
	// fromLong counts the jobs DequeueBatch calls with timeout long returned.
	fromLong atomic.Int64
	mu       sync.Mutex
	blocked  map[string]chan struct{} // closed when a DequeueBatch with timeout long begins on the queue
}

func (b *dequeueCalls) DequeueBatch(ctx context.Context, q, c string, n int, timeout time.Duration) ([]*queue.Delivery, error) {
	b.calls.Add(1)
	if timeout == b.long {
		b.mu.Lock()
		if ch, ok := b.blocked[q]; ok {
			delete(b.blocked, q)
			close(ch)
		}
		b.mu.Unlock()
	}
	ds, err := b.Broker.DequeueBatch(ctx, q, c, n, timeout)
	if timeout == b.long {
		b.fromLong.Add(int64(len(ds)))
	}
	return ds, err
}

// TestPool_IdleBlocksOnItsFirstQueueWithoutPolling: with every queue empty, a pool blocks in
// one DequeueBatch on its first queue (the heaviest) for its BlockTimeout and makes no other
// call meanwhile (it does not poll); a job arriving there is taken by that very call.
func TestPool_IdleBlocksOnItsFirstQueueWithoutPolling(t *testing.T) {
	const block = time.Hour
	b := &dequeueCalls{Broker: memqueue.NewBroker(memqueue.Options{}), long: block, blocked: map[string]chan struct{}{"heavy": make(chan struct{})}}
	blocked := b.blocked["heavy"]
	ran := make(chan string, 1)
	h := func(_ context.Context, d *queue.Delivery) error { ran <- d.Queue; return nil }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := queue.NewPool(b, queue.PoolSettings{BlockTimeout: block, Logger: log},
		queue.PoolQueue{Settings: queue.WorkerSettings{Queue: "light"}, Handler: h, Weight: 1},
		queue.PoolQueue{Settings: queue.WorkerSettings{Queue: "heavy"}, Handler: h, Weight: 5},
		queue.PoolQueue{Settings: queue.WorkerSettings{Queue: "middle"}, Handler: h, Weight: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle pool never blocked on its heaviest queue")
	}
	before := b.calls.Load()
	time.Sleep(300 * time.Millisecond) // a polling pool would call again meanwhile
	if after := b.calls.Load(); after != before {
		t.Fatalf("%d DequeueBatch calls while the pool should be blocked", after-before)
	}
	p, err := queue.NewProducer(b, "heavy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Enqueue(context.Background(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-ran:
		if q != "heavy" {
			t.Fatalf("ran a job of %s", q)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job on the queue the pool blocks on did not run")
	}
	if n := b.fromLong.Load(); n != 1 {
		t.Fatalf("the blocking calls returned %d jobs, want the one job", n)
	}
}

// TestPool_LeaseLapseStopsEveryQueuesHandlers: when the pool's heartbeats fail for longer than
// the lease allows, the running handlers of each of its queues are stopped and their jobs left
// unsettled, to be delivered again (as for a Worker of one queue).
func TestPool_LeaseLapseStopsEveryQueuesHandlers(t *testing.T) {
	mem := memqueue.NewBroker(memqueue.Options{})
	b := &failingHeartbeats{Broker: mem}
	const lease = 600 * time.Millisecond
	started := make(chan string, 2)
	stopped := make(chan error, 2)
	h := func(ctx context.Context, d *queue.Delivery) error {
		started <- d.Queue
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	}
	s := func(q string) queue.WorkerSettings {
		return queue.WorkerSettings{Queue: q, Lease: lease, BlockTimeout: 100 * time.Millisecond, ErrorDelay: 50 * time.Millisecond}
	}
	w, err := queue.NewPool(b, queue.PoolSettings{Concurrency: 2, NoPrefetch: true, BlockTimeout: 50 * time.Millisecond},
		queue.PoolQueue{Settings: s("a"), Handler: h, Weight: 1}, queue.PoolQueue{Settings: s("b"), Handler: h, Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for _, q := range []string{"a", "b"} {
		p, err := queue.NewProducer(b, q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Enqueue(context.Background(), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the jobs did not start")
		}
	}
	b.down.Store(true)
	for range 2 {
		select {
		case cause := <-stopped:
			if !redstate.IsCode(cause, redstate.EUNAVAILABLE) {
				t.Fatalf("handler stopped with cause %v, want the lease lapse", cause)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a handler still runs long after the pool's lease could have expired")
		}
	}
	for _, q := range []string{"a", "b"} {
		st, err := mem.Stats(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		// In flight, or back on pending once the lease expired (RecoverExpired): never settled.
		if st.Running+st.Pending != 1 || st.Retrying != 0 || st.Dead != 0 {
			t.Fatalf("%s after the lapse: %+v, want its job still in flight or recovered, not retried or dead", q, st)
		}
	}
}
