package queue_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// failingHeartbeats is a broker whose heartbeats fail once down is set, as a Redis outage makes
// them fail, while every other call still reaches the memory broker.
type failingHeartbeats struct {
	queue.Broker
	down atomic.Bool
}

func (b *failingHeartbeats) Heartbeat(ctx context.Context, q, consumer string, lease time.Duration) error {
	if b.down.Load() {
		return redstate.Errorf(redstate.EUNAVAILABLE, "heartbeat: redis is down")
	}
	return b.Broker.Heartbeat(ctx, q, consumer, lease)
}

// TestWorker_StopsRunningHandlersBeforeItsLeaseCanExpire: when heartbeats fail for longer than
// the lease minus one heartbeat period, the worker cancels its running handlers (another
// consumer may recover and run their jobs once the lease expires: the two runs must not
// overlap) and leaves the interrupted job unsettled, in flight, to be delivered again; it is
// neither retried nor dead-lettered. Without the lease watch the handler runs on and this test
// times out.
func TestWorker_StopsRunningHandlersBeforeItsLeaseCanExpire(t *testing.T) {
	mem := memqueue.NewBroker(memqueue.Options{})
	b := &failingHeartbeats{Broker: mem}
	const lease = 600 * time.Millisecond
	started := make(chan struct{})
	stopped := make(chan error, 1)
	h := func(ctx context.Context, d *queue.Delivery) error {
		close(started)
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	}
	w, err := queue.NewWorker(b, h, queue.WorkerSettings{Queue: "jobs", ConsumerID: "c1", Lease: lease, MaxRetries: 3,
		BlockTimeout: 100 * time.Millisecond, ErrorDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	p, err := queue.NewProducer(b, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Enqueue(context.Background(), json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not start")
	}
	b.down.Store(true)
	select {
	case cause := <-stopped:
		if cause == nil || !redstate.IsCode(cause, redstate.EUNAVAILABLE) {
			t.Fatalf("handler stopped with cause %v, want the lease lapse", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler still runs long after the worker's lease could have expired")
	}
	// The interrupted job is neither retried nor dead-lettered: it is still in flight at c1.
	var st queue.Stats
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err = mem.Stats(context.Background(), "jobs"); err != nil {
			t.Fatal(err)
		}
		if st.Running == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Running != 1 || st.Retrying != 0 || st.Dead != 0 {
		t.Fatalf("stats after the lapse = %+v, want the job still in flight (running 1), not retried or dead", st)
	}
}
