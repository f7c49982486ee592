package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// failingOnce fails its first AddThroughput, then passes calls to a memory broker.
type failingOnce struct {
	failed bool
	*memqueue.Broker
}

func (f *failingOnce) AddThroughput(ctx context.Context, q string, m int64, c map[string]int64) error {
	if !f.failed {
		f.failed = true
		return errors.New("redis down")
	}
	return f.Broker.AddThroughput(ctx, q, m, c)
}

// TestThroughputCounter_FailedFlushKeepsCounts: counts of a failed flush are written by the
// next one, not lost.
func TestThroughputCounter_FailedFlushKeepsCounts(t *testing.T) {
	ctx := context.Background()
	store := &failingOnce{Broker: memqueue.NewBroker(memqueue.Options{})}
	r := queue.NewThroughputCounter(store, time.Hour, nil)
	r.ObserveJob("q", queue.OutcomeAcked, 0)
	r.ObserveJob("q", queue.OutcomeAcked, 0)
	if err := r.Flush(ctx); err == nil {
		t.Fatal("first flush did not fail")
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix() / 60
	got, err := store.Throughput(ctx, "q", now-1, now)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range got {
		n += c[queue.OutcomeAcked]
	}
	if n != 2 {
		t.Fatalf("acked = %d after a failed and a good flush, want 2 (%v)", n, got)
	}
}
