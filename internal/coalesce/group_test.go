package coalesce

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

func TestGroup_EachCallerGetsItsOwnOutcome(t *testing.T) {
	g := NewGroup(GroupOptions[int]{Workers: 2, MaxBatch: 8}, double)
	var wg sync.WaitGroup
	for i := -50; i < 500; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := g.Do(context.Background(), i)
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

// heldGroup returns a one-worker Group whose first batch blocks until release is closed, and
// the sizes of the batches it ran, in order.
func heldGroup(opts GroupOptions[int]) (*Group[int, int], chan struct{}, chan struct{}, func() []int) {
	release, started := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	opts.Workers = 1
	g := NewGroup(opts, func(ctx context.Context, reqs []int) []Outcome[int] {
		mu.Lock()
		sizes = append(sizes, len(reqs))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			close(started)
			<-release
		}
		return double(ctx, reqs)
	})
	return g, release, started, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), sizes...)
	}
}

// waitWaiting waits until n calls wait in g.
func waitWaiting(g *Group[int, int], n int) {
	for {
		g.mu.Lock()
		k := len(g.waiting)
		g.mu.Unlock()
		if k >= n {
			return
		}
		runtime.Gosched()
	}
}

func TestGroup_CallsArrivingDuringABatchLeaveTogether(t *testing.T) {
	g, release, started, sizes := heldGroup(GroupOptions[int]{MaxBatch: 64})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = g.Do(context.Background(), 1) }()
	<-started
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := g.Do(context.Background(), i); err != nil || v != 2*i {
				t.Errorf("Do(%d) = %d, %v", i, v, err)
			}
		}()
	}
	waitWaiting(g, 20)
	close(release)
	wg.Wait()
	if got := sizes(); len(got) != 2 || got[0] != 1 || got[1] != 20 {
		t.Fatalf("batch sizes %v, want [1 20]", got)
	}
}

func TestGroup_BatchesRespectMaxBatchAndMaxCost(t *testing.T) {
	g, release, started, sizes := heldGroup(GroupOptions[int]{MaxBatch: 4, Cost: func(r int) int { return r }, MaxCost: 10})
	go func() { _, _ = g.Do(context.Background(), 0) }()
	<-started
	var wg sync.WaitGroup
	// Batches: 1 1 1 1 (MaxBatch) | 1 3 3 3 (cost 10) | 3 2 | 9 | 20 (alone over MaxCost,
	// still sent).
	in := []int{1, 1, 1, 1, 1, 3, 3, 3, 3, 2, 9, 20}
	for j, r := range in {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = g.Do(context.Background(), r) }()
		waitWaiting(g, j+1) // keep the arrival order
	}
	close(release)
	wg.Wait()
	got := sizes()
	want := []int{1, 4, 4, 2, 1, 1}
	if len(got) != len(want) {
		t.Fatalf("batch sizes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batch sizes %v, want %v", got, want)
		}
	}
}

// The caller that ran the first batch returns as soon as its own call is answered; the calls
// still waiting are run by a goroutine of their own. A waiting caller whose ctx ends leaves at
// once.
func TestGroup_NoCallWaitsForACallerThatLeft(t *testing.T) {
	g, release, started, sizes := heldGroup(GroupOptions[int]{MaxBatch: 1})
	first := make(chan error, 1)
	go func() { _, err := g.Do(context.Background(), 1); first <- err }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	leaving := make(chan error, 1)
	go func() { _, err := g.Do(ctx, 100); leaving <- err }()
	waitWaiting(g, 1)
	others := make(chan error, 3)
	for i := range 3 {
		go func() { _, err := g.Do(context.Background(), i); others <- err }()
	}
	waitWaiting(g, 4)
	cancel()
	if err := <-leaving; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Do = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first Do: %v", err)
	}
	for range 3 {
		if err := <-others; err != nil {
			t.Fatalf("Do after the first caller left: %v", err)
		}
	}
	if got := sizes(); len(got) != 5 {
		t.Fatalf("batch sizes %v, want 5 batches of one (the canceled call is still sent)", got)
	}
}

func TestGroup_PanicFailsOnlyThatBatch(t *testing.T) {
	g := NewGroup(GroupOptions[int]{}, func(ctx context.Context, reqs []int) []Outcome[int] {
		if reqs[0] == 7 {
			panic("boom")
		}
		return double(ctx, reqs)
	})
	if _, err := g.Do(context.Background(), 7); err == nil {
		t.Fatal("Do of a panicking batch succeeded")
	}
	if v, err := g.Do(context.Background(), 2); err != nil || v != 4 {
		t.Fatalf("Do after a panic = %d, %v; want 4", v, err)
	}
}
