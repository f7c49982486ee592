package redisconn

import (
	"context"
	"runtime"
	"sync/atomic"
)

// batchTurns makes the cache's batch reads take turns on the CPUs while they are answered
// from memory.
//
// A batch answered from memory is CPU work only (about a microsecond per key). With more
// concurrent batch readers than CPUs, Go's scheduler shares the CPUs unevenly (a goroutine
// just woken may run before older runnable ones, a running one keeps its CPU for up to 10 ms),
// and some batches waited ten times as long as the mean: `redstate-bench buildstatus`
// batch_get_cached, 16 callers of 1,000 cached ids on 2 CPUs, p99 187 ms against a mean of
// 11 ms; with turns, 19 ms and the same throughput. So while batches are mostly hits (a moving
// average of at least 90 %), at most GOMAXPROCS batches run at once and the others wait in arrival order (a channel
// serves its waiting senders first come, first served). A batch that goes to Redis for most of
// its keys waits on the network, not on a CPU, and turns held across round trips halved the
// throughput of batches that missed (same bench with a 1 ms cache TTL): so while batches miss more
// than that, they run without turns.
type batchTurns struct {
	turns chan struct{}
	// hitShare is a moving average of the batches' shares of hits, in per mille: each batch
	// moves it a quarter of the way to its own share, so a few batches decide, not one.
	hitShare atomic.Int64
}

// hotShare is the average share of hits, in per mille, from which batches take turns.
const hotShare = 900

func newBatchTurns() *batchTurns {
	return &batchTurns{turns: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))}
}

// take waits for a turn if batches are mostly answered from memory (hotShare) and returns
// the function that ends it (a no-op when no turn was taken). It fails only when ctx ends
// while waiting.
func (t *batchTurns) take(ctx context.Context) (done func(), err error) {
	if t.hitShare.Load() < hotShare {
		return func() {}, nil
	}
	select {
	case t.turns <- struct{}{}:
		return func() { <-t.turns }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// record notes that a batch of n keys had hits answered from memory. Concurrent records may
// overwrite each other's step; the average stays an average of recent batches.
func (t *batchTurns) record(hits, n int) {
	if n <= 0 {
		return
	}
	avg := t.hitShare.Load()
	share := int64(hits) * 1000 / int64(n)
	t.hitShare.Store(avg + (share-avg)/4)
}
