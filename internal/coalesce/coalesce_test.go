package coalesce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func double(_ context.Context, reqs []int) []Outcome[int] {
	out := make([]Outcome[int], len(reqs))
	for i, r := range reqs {
		if r < 0 {
			out[i].Err = errors.New("negative")
			continue
		}
		out[i].Value = 2 * r
	}
	return out
}

func TestBatcher_EachCallerGetsItsOwnOutcome(t *testing.T) {
	b := New(Options{Workers: 2, MaxBatch: 8}, double)
	defer b.Close()
	var wg sync.WaitGroup
	for i := -50; i < 500; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := b.Do(context.Background(), i)
			if i < 0 {
				if err == nil {
					t.Errorf("Do(%d) succeeded, want its own error", i)
				}
				return
			}
			if err != nil || v != 2*i {
				t.Errorf("Do(%d) = %d, %v; want %d", i, v, err, 2*i)
			}
		}()
	}
	wg.Wait()
}

func TestBatcher_CoalescesWaitingCalls(t *testing.T) {
	release := make(chan struct{})
	var batches, largest atomic.Int64
	exec := func(ctx context.Context, reqs []int) []Outcome[int] {
		if batches.Add(1) == 1 {
			<-release // hold the only worker so that the others queue up
		}
		if n := int64(len(reqs)); n > largest.Load() {
			largest.Store(n)
		}
		return double(ctx, reqs)
	}
	b := New(Options{Workers: 1, MaxBatch: 64}, exec)
	defer b.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = b.Do(context.Background(), 0) }()
	for batches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i <= 20; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = b.Do(context.Background(), i) }()
	}
	for len(b.queue) < 20 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if batches.Load() != 2 || largest.Load() != 20 {
		t.Fatalf("batches = %d, largest = %d; want the 20 waiting calls in one batch", batches.Load(), largest.Load())
	}
}

func TestBatcher_CallerContextEnds(t *testing.T) {
	block := make(chan struct{})
	b := New(Options{Workers: 1, MaxBatch: 1}, func(ctx context.Context, reqs []int) []Outcome[int] {
		<-block
		return double(ctx, reqs)
	})
	defer b.Close()
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Do(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do = %v, want the caller's deadline", err)
	}
}

func TestBatcher_ClosedRejectsCalls(t *testing.T) {
	b := New(Options{}, double)
	b.Close()
	b.Close()
	if _, err := b.Do(context.Background(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
}

func TestBatcher_PanickingExecAnswersItsCallersAndSurvives(t *testing.T) {
	b := New(Options{Workers: 1, MaxBatch: 4}, func(ctx context.Context, reqs []int) []Outcome[int] {
		if reqs[0] < 0 {
			panic("boom")
		}
		return double(ctx, reqs)
	})
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := b.Do(ctx, -1); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do on a panicking batch = %v, want the panic as an error", err)
	}
	if v, err := b.Do(ctx, 21); err != nil || v != 42 {
		t.Fatalf("Do after a panic = %d, %v; the worker must survive", v, err)
	}
}
