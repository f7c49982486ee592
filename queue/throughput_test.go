package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// failingOnce fails its first AddThroughputBatch, having applied it when applied is set (its
// answer was lost), then passes calls to a memory broker.
type failingOnce struct {
	failed, applied bool
	*memqueue.Broker
}

func (f *failingOnce) AddThroughputBatch(ctx context.Context, q string, m int64, id string, c map[string]int64) error {
	if !f.failed {
		f.failed = true
		if f.applied {
			if err := f.Broker.AddThroughputBatch(ctx, q, m, id, c); err != nil {
				return err
			}
		}
		return errors.New("redis: i/o timeout")
	}
	return f.Broker.AddThroughputBatch(ctx, q, m, id, c)
}

// TestThroughputCounter_FailedFlushKeepsCounts: counts of a failed flush are written by the
// next one, not lost, and not counted twice when the failed flush was applied all the same
// (its answer was lost): the next flush repeats the batch under its id.
func TestThroughputCounter_FailedFlushKeepsCounts(t *testing.T) {
	for name, applied := range map[string]bool{"NotApplied": false, "AppliedAnswerLost": true} {
		t.Run(name, func(t *testing.T) { testFailedFlush(t, applied) })
	}
}

func testFailedFlush(t *testing.T, applied bool) {
	ctx := context.Background()
	store := &failingOnce{applied: applied, Broker: memqueue.NewBroker(memqueue.Options{})}
	r := queue.NewThroughputCounter(store, time.Hour, nil)
	r.ObserveJob("q", queue.OutcomeAcked, 0)
	r.ObserveJob("q", queue.OutcomeAcked, 0)
	if err := r.Flush(ctx); err == nil {
		t.Fatal("first flush did not fail")
	}
	r.ObserveJob("q", queue.OutcomeAcked, 0)
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
	if n != 3 {
		t.Fatalf("acked = %d after a failed and a good flush, want 3 (%v)", n, got)
	}
}
