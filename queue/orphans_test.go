package queue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// rolledBackAcks is a Broker whose first Ack and AckBatch report success without acking: what a
// worker sees when a Redis failover promotes a replica that never received its ack.
type rolledBackAcks struct {
	queue.Broker
	mu   sync.Mutex
	lied bool
}

func (b *rolledBackAcks) lie() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lied {
		return false
	}
	b.lied = true
	return true
}

func (b *rolledBackAcks) Ack(ctx context.Context, d *queue.Delivery) error {
	if b.lie() {
		return nil
	}
	return b.Broker.Ack(ctx, d)
}

func (b *rolledBackAcks) AckBatch(ctx context.Context, ds []*queue.Delivery) []error {
	if len(ds) == 1 && b.lie() {
		return []error{nil}
	}
	return b.Broker.AckBatch(ctx, ds)
}

// A job whose ack was rolled back stays in flight at a worker that keeps its lease: without the
// in-flight audit it never runs again. The worker gives it back after one Lease and it runs.
func TestWorker_ReleasesAJobWhoseAckWasRolledBack(t *testing.T) {
	mem := memqueue.NewBroker(memqueue.Options{})
	b := &rolledBackAcks{Broker: mem}
	var runs atomic.Int64
	done := make(chan struct{}, 2)
	h := func(context.Context, *queue.Delivery) error {
		runs.Add(1)
		done <- struct{}{}
		return nil
	}
	cfg := queue.WorkerSettings{Queue: "jobs", Lease: 300 * time.Millisecond, PromoteInterval: 20 * time.Millisecond, BlockTimeout: 50 * time.Millisecond}
	w, err := queue.NewWorker(b, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()

	if err := mem.Enqueue(context.Background(), "jobs", queue.NewMessage(time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("run %d of the job never happened (runs: %d): the rolled-back job stayed in flight", i+1, runs.Load())
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := mem.InFlight(context.Background(), "jobs", w.ConsumerID())
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still in flight after the second run: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("runs = %d, want 2", n)
	}
}
