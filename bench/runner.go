package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one benchmarked operation. client is the caller's index (0..Clients-1), i counts that
// client's calls; both let an Op pick inputs without sharing state.
type Op func(ctx context.Context, client int, i int64) error

// Config configures a run.
type Config struct {
	// Clients is the number of concurrent callers (default 1).
	Clients int
	// Duration bounds the run's wall time. Zero with Ops set means no time bound.
	Duration time.Duration
	// Ops, when positive, stops the run after this many operations in total.
	Ops int64
	// Progress, when non-nil, receives a line per second with the operations done so far.
	Progress io.Writer
}

// Run calls op from cfg.Clients goroutines until cfg.Duration has passed, cfg.Ops operations
// were done, or ctx ends, and returns the latencies. Failed operations are counted, not timed.
func Run(ctx context.Context, name string, cfg Config, op Op) *Result {
	if cfg.Clients < 1 {
		cfg.Clients = 1
	}
	if cfg.Duration <= 0 && cfg.Ops <= 0 {
		cfg.Duration = time.Second
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	var (
		done, failed atomic.Int64
		claimed      atomic.Int64
		mu           sync.Mutex
		firstErr     error
		wg           sync.WaitGroup
		lat          = make([][]time.Duration, cfg.Clients)
	)
	stopProgress := progress(cfg.Progress, name, &done)
	start := time.Now()
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := make([]time.Duration, 0, 4096)
			for i := int64(0); ctx.Err() == nil; i++ {
				if cfg.Ops > 0 && claimed.Add(1) > cfg.Ops {
					break
				}
				t0 := time.Now()
				err := op(ctx, c, i)
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						break // the run ended during the call: neither counted nor timed
					}
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				own = append(own, d)
				done.Add(1)
			}
			lat[c] = own
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	all := slices.Concat(lat...)
	slices.Sort(all)
	return &Result{Name: name, Ops: int64(len(all)), Errors: failed.Load(), FirstErr: firstErr, Elapsed: elapsed, Latencies: all}
}

// RunPair benchmarks a and b under the same conditions: the duration is cut into up to ten
// slices of at least one second (or the whole duration if shorter) and the two run in turns,
// in A B B A order so that drift over time (cache warm-up, background saves) hits both equally.
// Each gets cfg.Duration of wall time in total.
func RunPair(ctx context.Context, nameA, nameB string, cfg Config, a, b Op) (ra, rb *Result) {
	slicesN := int(cfg.Duration / time.Second)
	slicesN = max(2, min(slicesN, 10))
	if slicesN%2 == 1 {
		slicesN++
	}
	part := cfg.Duration / time.Duration(slicesN)
	one := cfg
	one.Duration = part
	ra, rb = &Result{Name: nameA}, &Result{Name: nameB}
	for i := range slicesN {
		if ctx.Err() != nil {
			break
		}
		if i%2 == 0 {
			ra.Merge(Run(ctx, nameA, one, a))
			rb.Merge(Run(ctx, nameB, one, b))
		} else {
			rb.Merge(Run(ctx, nameB, one, b))
			ra.Merge(Run(ctx, nameA, one, a))
		}
	}
	return ra, rb
}

// progress prints name's completed operations to w once per second until the returned func
// is called.
func progress(w io.Writer, name string, done *atomic.Int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				n := done.Load()
				fmt.Fprintf(w, "  %s: %d ops in %.0fs (%.0f ops/s)\n", name, n, now.Sub(start).Seconds(), float64(n)/now.Sub(start).Seconds())
			}
		}
	}()
	return func() { close(quit); <-finished }
}
