package component

import (
	"context"
	"fmt"
	"sync"
)

// Background runs a component's goroutines: Go starts them under one context that Stop
// cancels, and Stop waits for all of them within a deadline. The zero value is ready to use.
type Background struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
}

// Go runs f in a goroutine with a context that ends when parent ends or Stop is called. The
// first call fixes the parent; later calls join the same context.
func (b *Background) Go(parent context.Context, f func(ctx context.Context)) {
	b.mu.Lock()
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(parent)
	}
	ctx := b.ctx
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		f(ctx)
	}()
}

// Stop cancels the goroutines' context and waits until they all returned or ctx ends
// (then it returns an error; the goroutines keep winding down on their own).
func (b *Background) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("background work did not stop in time: %w", ctx.Err())
	}
}
