package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// latencies is an Observer that also hears the latencies (queue.LatencyObserver).
type latencies struct {
	mu       sync.Mutex
	outcomes []string
	got      []time.Duration
}

func (l *latencies) ObserveJob(_, outcome string, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, outcome)
}

func (l *latencies) ObserveLatency(_ string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, d)
}

// A job done reports its latency after its EnqueueTime (on the worker's clock), through a
// MultiObserver too; a job that fails reports none.
func TestWorker_ReportsTheLatencyOfJobsDone(t *testing.T) {
	ctx := context.Background()
	b := memqueue.NewBroker(memqueue.Options{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	obs := &latencies{}
	fail := false
	h := func(context.Context, *queue.Delivery) error {
		if fail {
			return errors.New("no")
		}
		return nil
	}
	w, err := queue.NewWorker(b, h, queue.WorkerSettings{Queue: "jobs", Observer: queue.MultiObserver{obs}, MaxRetries: 1,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []bool{false, true} {
		fail = f
		if err := b.Enqueue(ctx, "jobs", queue.NewMessage(now.Add(-3*time.Second), nil)); err != nil {
			t.Fatal(err)
		}
		if err := b.Heartbeat(ctx, "jobs", "c", time.Minute); err != nil {
			t.Fatal(err)
		}
		d, err := b.Dequeue(ctx, "jobs", "c", time.Second)
		if err != nil || d == nil {
			t.Fatalf("dequeue: %v %v", d, err)
		}
		w.Process(ctx, d)
	}
	if len(obs.outcomes) != 2 || obs.outcomes[0] != queue.OutcomeAcked || obs.outcomes[1] != queue.OutcomeRetried {
		t.Fatalf("outcomes = %v", obs.outcomes)
	}
	if len(obs.got) != 1 || obs.got[0] != 3*time.Second {
		t.Errorf("latencies = %v, want [3s] (the acked job's only)", obs.got)
	}
}
