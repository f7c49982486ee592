package redisconn

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

func TestBatchTurns_TakenWhileBatchesAreMostlyHits(t *testing.T) {
	turns := newBatchTurns()
	// Cold: no batch recorded yet, so any number of batches run at once.
	var dones []func()
	for range runtime.GOMAXPROCS(0) + 3 {
		done, err := turns.take(context.Background())
		if err != nil {
			t.Fatalf("take on an open gate: %v", err)
		}
		dones = append(dones, done)
	}
	for _, done := range dones {
		done()
	}

	// One hot batch is not enough; a few are.
	turns.record(100, 100)
	if done, err := turns.take(context.Background()); err != nil || turns.hitShare.Load() >= hotShare {
		t.Fatalf("after one hot batch: share %d, take err %v; want still open", turns.hitShare.Load(), err)
	} else {
		done()
	}
	for range 12 {
		turns.record(95, 100)
	}
	dones = dones[:0]
	for range runtime.GOMAXPROCS(0) {
		done, err := turns.take(context.Background())
		if err != nil {
			t.Fatalf("take within GOMAXPROCS turns: %v", err)
		}
		dones = append(dones, done)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := turns.take(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take beyond GOMAXPROCS turns after a hot batch = %v, want to wait until the context ends", err)
	}
	dones[0]()
	done, err := turns.take(context.Background())
	if err != nil {
		t.Fatalf("take after a turn ended: %v", err)
	}
	done()

	// A batch that was mostly misses opens the gate again.
	turns.record(10, 100)
	turns.record(10, 100)
	more, err := turns.take(context.Background())
	if err != nil {
		t.Fatalf("take after a cold batch: %v", err)
	}
	more()
	for _, done := range dones[1:] {
		done()
	}
}

func TestBatchTurns_EmptyBatchChangesNothing(t *testing.T) {
	turns := newBatchTurns()
	turns.record(100, 100)
	before := turns.hitShare.Load()
	turns.record(0, 0)
	if got := turns.hitShare.Load(); got != before {
		t.Fatalf("an empty batch moved the average from %d to %d", before, got)
	}
}
