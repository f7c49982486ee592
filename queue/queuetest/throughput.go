package queuetest

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// RunThroughputSuite checks a queue.ThroughputStore: counts add up per minute and outcome
// (also through a ThroughputCounter flushing twice, as two instances would), queues are kept
// apart, ranges are inclusive and bounded, and bad names are refused.
func RunThroughputSuite(t *testing.T, newStore func(t *testing.T) queue.ThroughputStore) {
	ctx := context.Background()
	t.Run("BatchCountsOnce", func(t *testing.T) {
		// A batch repeated under its id (its first add failed without an answer, or the
		// Redis client re-sent it) counts once; another id counts again; bad ids are refused.
		s := newStore(t)
		q := NewQueueName()
		id := queue.NewJobID()
		for range 2 {
			if err := s.AddThroughputBatch(ctx, q, 100, id, map[string]int64{queue.OutcomeAcked: 3}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.AddThroughputBatch(ctx, q, 100, queue.NewJobID(), map[string]int64{queue.OutcomeAcked: 1}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Throughput(ctx, q, 100, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n := got[100][queue.OutcomeAcked]; n != 4 {
			t.Fatalf("acked = %d, want 4 (a batch of 3 added twice under one id, and 1)", n)
		}
		for _, bad := range []string{"", "a{b}", string(make([]byte, 65))} {
			if err := s.AddThroughputBatch(ctx, q, 100, bad, map[string]int64{queue.OutcomeAcked: 1}); !redstate.IsCode(err, redstate.EINVALID) {
				t.Errorf("batch id %q: %v, want EINVALID", bad, err)
			}
		}
	})
	t.Run("AddsUpPerMinuteAndOutcome", func(t *testing.T) {
		s := newStore(t)
		q, other := NewQueueName(), NewQueueName()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(s.AddThroughput(ctx, q, 100, map[string]int64{queue.OutcomeAcked: 3, queue.OutcomeDead: 1}))
		must(s.AddThroughput(ctx, q, 100, map[string]int64{queue.OutcomeAcked: 2}))
		must(s.AddThroughput(ctx, q, 102, map[string]int64{queue.OutcomeRetried: 5}))
		must(s.AddThroughput(ctx, other, 100, map[string]int64{queue.OutcomeAcked: 7}))
		got, err := s.Throughput(ctx, q, 99, 102)
		must(err)
		want := map[int64]map[string]int64{100: {queue.OutcomeAcked: 5, queue.OutcomeDead: 1}, 102: {queue.OutcomeRetried: 5}}
		if !maps.EqualFunc(got, want, maps.Equal) {
			t.Fatalf("Throughput = %v, want %v", got, want)
		}
		if got, _ := s.Throughput(ctx, q, 101, 101); len(got) != 0 {
			t.Errorf("an empty minute = %v", got)
		}
	})
	t.Run("CounterFlushesSharedCounts", func(t *testing.T) {
		s := newStore(t)
		q := NewQueueName()
		a, b := queue.NewThroughputCounter(s, time.Hour, nil), queue.NewThroughputCounter(s, time.Hour, nil)
		for range 3 {
			a.ObserveJob(q, queue.OutcomeAcked, time.Millisecond)
		}
		b.ObserveJob(q, queue.OutcomeAcked, time.Millisecond)
		b.ObserveJob(q, queue.OutcomeDead, time.Millisecond)
		if err := errors.Join(a.Flush(ctx), b.Flush(ctx), a.Flush(ctx)); err != nil {
			t.Fatal(err)
		}
		now := time.Now().Unix() / 60
		got, err := s.Throughput(ctx, q, now-1, now)
		if err != nil {
			t.Fatal(err)
		}
		var acked, dead int64
		for _, c := range got {
			acked += c[queue.OutcomeAcked]
			dead += c[queue.OutcomeDead]
		}
		if acked != 4 || dead != 1 {
			t.Errorf("acked %d dead %d after two instances flushed, want 4 and 1 (%v)", acked, dead, got)
		}
	})
	t.Run("InvalidArguments", func(t *testing.T) {
		s := newStore(t)
		if err := s.AddThroughput(ctx, "bad name{", 1, map[string]int64{"acked": 1}); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("AddThroughput of a bad name = %v", err)
		}
		for _, r := range [][2]int64{{5, 4}, {0, int64(queue.MaxThroughputMinutes)}} {
			if _, err := s.Throughput(ctx, NewQueueName(), r[0], r[1]); !redstate.IsCode(err, redstate.EINVALID) {
				t.Errorf("Throughput %v = %v, want EINVALID", r, err)
			}
		}
		if _, err := s.Throughput(ctx, NewQueueName(), 0, int64(queue.MaxThroughputMinutes)-1); err != nil {
			t.Errorf("a full day: %v", err)
		}
	})
}
