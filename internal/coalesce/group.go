package coalesce

import (
	"context"
	"sync"
)

// Group coalesces concurrent Do calls into batches like a Batcher, but owns no goroutines: a
// caller that finds fewer than Workers batches in flight runs the batches itself, its own call
// and every call waiting at that moment (up to MaxBatch), then hands the rest to a goroutine
// that lives only while calls keep waiting. A Group at rest costs nothing and needs no Close,
// so it suits a value, such as a queue broker, whose owners never close it. The zero value is
// not usable; build one with NewGroup.
type Group[Req, Res any] struct {
	exec     ExecFunc[Req, Res]
	cost     func(Req) int
	maxBatch int
	maxCost  int
	workers  int

	mu      sync.Mutex
	waiting []*call[Req, Res]
	running int
}

// GroupOptions configure a Group.
type GroupOptions[Req any] struct {
	// Workers is the number of batches in flight at once (default 1: the calls arriving while
	// one batch runs all leave together in the next).
	Workers int
	// MaxBatch bounds a batch's number of calls (default 64).
	MaxBatch int
	// Cost, if set, is a call's share of MaxCost (for example its size in bytes); a batch takes
	// calls while their total stays within MaxCost, and always at least one.
	Cost func(Req) int
	// MaxCost bounds a batch's total Cost (ignored without Cost).
	MaxCost int
}

// NewGroup returns a Group running batches through exec.
func NewGroup[Req, Res any](opts GroupOptions[Req], exec ExecFunc[Req, Res]) *Group[Req, Res] {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	if opts.Cost == nil {
		opts.MaxCost = 0
	}
	return &Group[Req, Res]{exec: exec, cost: opts.Cost, maxBatch: opts.MaxBatch, maxCost: opts.MaxCost, workers: opts.Workers}
}

// Do submits req and waits for its outcome. If ctx ends while the call waits, Do returns ctx's
// error; the request may still be executed (exactly like a request whose reply was lost). A
// caller that runs a batch returns when that batch ends, whatever its ctx: the batch runs with
// the caller's context values but not its cancellation, since it carries other calls too, so
// exec must bound its own time (a Redis client's timeouts do).
func (g *Group[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	c := &call[Req, Res]{req: req, done: make(chan struct{})}
	g.mu.Lock()
	g.waiting = append(g.waiting, c)
	if g.running < g.workers {
		g.running++
		g.drain(context.WithoutCancel(ctx), c)
	} else {
		g.mu.Unlock()
	}
	select {
	case <-c.done:
		return c.out.Value, c.out.Err
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// drain runs batches, with g.mu held on entry and released on return, until mine is answered;
// calls still waiting then go on in a goroutine of their own, so that no call waits for a
// caller that has left.
func (g *Group[Req, Res]) drain(ctx context.Context, mine *call[Req, Res]) {
	for len(g.waiting) > 0 {
		batch := g.take()
		g.mu.Unlock()
		g.run(ctx, batch)
		g.mu.Lock()
		if mine != nil && isDone(mine) && len(g.waiting) > 0 {
			g.mu.Unlock() // the batch slot stays taken: it passes to the goroutine
			go func() {
				g.mu.Lock()
				g.drain(ctx, nil)
			}()
			return
		}
	}
	g.running--
	g.mu.Unlock()
}

// take removes the next batch from the waiting calls (g.mu held).
func (g *Group[Req, Res]) take() []*call[Req, Res] {
	n, total := 0, 0
	for n < len(g.waiting) && n < g.maxBatch {
		if g.cost != nil {
			total += g.cost(g.waiting[n].req)
			if n > 0 && total > g.maxCost {
				break
			}
		}
		n++
	}
	batch := make([]*call[Req, Res], n)
	copy(batch, g.waiting)
	rest := copy(g.waiting, g.waiting[n:])
	clear(g.waiting[rest:])
	g.waiting = g.waiting[:rest]
	return batch
}

// run executes one batch and answers its calls.
func (g *Group[Req, Res]) run(ctx context.Context, batch []*call[Req, Res]) {
	reqs := make([]Req, len(batch))
	for i, c := range batch {
		reqs[i] = c.req
	}
	answer(batch, safeExec(g.exec, ctx, reqs))
}

func isDone[Req, Res any](c *call[Req, Res]) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
