// Package coalesce merges concurrent calls into batches: group commit for Redis round trips.
//
// A Batcher has a fixed number of workers. Each worker takes the oldest waiting call, adds every
// other call already waiting (up to MaxBatch) without waiting for more, runs them as one batch
// and hands each caller its own result. A lone caller therefore never waits for company: its
// batch has one call and it costs one goroutine hand-off. Under load, calls that arrive while
// every worker is busy queue up and leave together, so N concurrent callers cost about
// N/MaxBatch round trips instead of N, on the client and on the server.
package coalesce

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("coalesce: batcher closed")

// Outcome is one call's result within a batch.
type Outcome[Res any] struct {
	Value Res
	Err   error
}

// ExecFunc runs a batch and returns exactly one Outcome per request, in order. It runs on a
// worker goroutine with a context that is not canceled by any single caller.
type ExecFunc[Req, Res any] func(ctx context.Context, reqs []Req) []Outcome[Res]

// Options configure a Batcher.
type Options struct {
	// Workers is the number of batches in flight at once (default 4).
	Workers int
	// MaxBatch bounds a batch's size (default 64).
	MaxBatch int
}

// Batcher coalesces concurrent Do calls into batches run by ExecFunc. Safe for concurrent use.
type Batcher[Req, Res any] struct {
	exec     ExecFunc[Req, Res]
	maxBatch int
	queue    chan *call[Req, Res]
	quit     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	once     sync.Once

	mu     sync.RWMutex // held for reading while submitting, for writing by Close
	closed bool
}

type call[Req, Res any] struct {
	req  Req
	out  Outcome[Res]
	done chan struct{}
}

// New starts a Batcher's workers. Call Close to stop them.
func New[Req, Res any](opts Options, exec ExecFunc[Req, Res]) *Batcher[Req, Res] {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher[Req, Res]{
		exec:     exec,
		maxBatch: opts.MaxBatch,
		queue:    make(chan *call[Req, Res], opts.Workers*opts.MaxBatch),
		quit:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
	}
	for range opts.Workers {
		b.wg.Add(1)
		go b.work()
	}
	return b
}

// Do submits req and waits for its outcome. If ctx ends first, Do returns ctx's error; the
// request may still be executed (exactly like a request whose reply was lost).
func (b *Batcher[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	c := &call[Req, Res]{req: req, done: make(chan struct{})}
	var zero Res
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return zero, ErrClosed
	}
	select {
	case b.queue <- c:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return zero, ctx.Err()
	}
	select {
	case <-c.done:
		return c.out.Value, c.out.Err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Close stops the workers after the batches in flight; calls still queued fail with
// ErrClosed. Close is idempotent.
func (b *Batcher[Req, Res]) Close() {
	b.once.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		close(b.quit)
		b.wg.Wait()
		b.cancel()
		for {
			select {
			case c := <-b.queue:
				c.out.Err = ErrClosed
				close(c.done)
			default:
				return
			}
		}
	})
}

// safeExec calls exec, turning a panic into an error for every call of the batch so that its
// callers are answered and the goroutine running it survives.
func safeExec[Req, Res any](exec ExecFunc[Req, Res], ctx context.Context, reqs []Req) (outs []Outcome[Res]) {
	defer func() {
		if p := recover(); p != nil {
			outs = make([]Outcome[Res], len(reqs))
			for i := range outs {
				outs[i].Err = fmt.Errorf("coalesce: batch panicked: %v", p)
			}
		}
	}()
	return exec(ctx, reqs)
}

// answer hands each call of batch its outcome and wakes its caller.
func answer[Req, Res any](batch []*call[Req, Res], outs []Outcome[Res]) {
	for i, c := range batch {
		if i < len(outs) {
			c.out = outs[i]
		} else {
			c.out.Err = errors.New("coalesce: exec returned too few outcomes")
		}
		close(c.done)
	}
}

func (b *Batcher[Req, Res]) work() {
	defer b.wg.Done()
	batch := make([]*call[Req, Res], 0, b.maxBatch)
	reqs := make([]Req, 0, b.maxBatch)
	for {
		select {
		case <-b.quit:
			return
		case c := <-b.queue:
			batch = append(batch[:0], c)
		}
	fill:
		for len(batch) < b.maxBatch {
			select {
			case c := <-b.queue:
				batch = append(batch, c)
			default:
				break fill
			}
		}
		reqs = reqs[:0]
		for _, c := range batch {
			reqs = append(reqs, c.req)
		}
		answer(batch, safeExec(b.exec, b.ctx, reqs))
		clear(batch)
	}
}
