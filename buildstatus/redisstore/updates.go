package redisstore

import (
	"context"
	"hash/maphash"
)

// updateStripes is how many build-update queues a Store keeps; builds share them by hash.
const updateStripes = 64

// updateQueues serialize a process's read-modify-write updates of one build (UpdatePlatform):
// concurrent updates of the same build in this process take turns instead of racing each
// other's compare-and-set, which under load made most attempts fail and could exhaust
// maxCASAttempts. Updates from other processes still meet the compare-and-set.
type updateQueues struct {
	seed  maphash.Seed
	slots [updateStripes]chan struct{}
}

func newUpdateQueues() *updateQueues {
	q := &updateQueues{seed: maphash.MakeSeed()}
	for i := range q.slots {
		q.slots[i] = make(chan struct{}, 1)
	}
	return q
}

// enter waits for buildID's turn (or ctx's end: EUNAVAILABLE) and returns the function that
// ends it.
func (q *updateQueues) enter(ctx context.Context, buildID string) (leave func(), err error) {
	slot := q.slots[maphash.String(q.seed, buildID)%updateStripes]
	select {
	case slot <- struct{}{}:
		return func() { <-slot }, nil
	case <-ctx.Done():
		return nil, unavailable(ctx.Err(), "waiting for the build's earlier update")
	}
}
