package coalesce

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestBatcherAudit_LoneCallIsNeverDelayed: docs/buildstatus.md "A lone call is never delayed
// waiting for company" — with an idle worker every call leaves at once, alone in its batch, so
// sequential calls cost no linger time (a linger of even 1 ms per call would exceed the bound).
func TestBatcherAudit_LoneCallIsNeverDelayed(t *testing.T) {
	var largest atomic.Int64
	exec := func(ctx context.Context, reqs []int) []Outcome[int] {
		if n := int64(len(reqs)); n > largest.Load() {
			largest.Store(n)
		}
		return double(ctx, reqs)
	}
	b := New(Options{Workers: 4, MaxBatch: 64}, exec)
	defer b.Close()
	const calls = 500
	start := time.Now()
	for i := range calls {
		if v, err := b.Do(context.Background(), i); err != nil || v != 2*i {
			t.Fatalf("Do(%d) = %d, %v", i, v, err)
		}
	}
	if el := time.Since(start); el > 400*time.Millisecond {
		t.Fatalf("%d sequential lone calls took %v: calls wait for company", calls, el)
	}
	if largest.Load() != 1 {
		t.Fatalf("a lone sequential call shared a batch of %d", largest.Load())
	}
}
