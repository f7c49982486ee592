//go:build chaos

package chaos

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redstate/redstate/index"
)

// recordingStore is the index's Redis store as the Indexer sees it, recording in the current
// phase's applyRecord each row write: acknowledged when the store's Apply returned no error,
// else failed.
type recordingStore struct {
	index.Store
	// rec is the current phase's record; nil while nothing is recorded (the repair).
	rec atomic.Pointer[applyRecord]
}

// Apply applies writes and records them. A call cut short by the end of its context has an
// unknown outcome and is not recorded.
func (s *recordingStore) Apply(ctx context.Context, writes []index.RowWrite) ([]index.Outcome, error) {
	out, err := s.Store.Apply(ctx, writes)
	if rec := s.rec.Load(); rec != nil && (err == nil || ctx.Err() == nil) {
		rec.add(writes, out, err)
	}
	return out, err
}

// rowVersion is one change of one row: the row's version key and the change's version.
type rowVersion struct {
	key     string
	version index.Version
}

// applyRecord is what the store acknowledged in one phase.
type applyRecord struct {
	log opLog

	mu sync.Mutex
	// acks counts the acknowledged applies of each change (applied or stale): more than one
	// is a redelivery.
	acks map[rowVersion]int
	// applied holds the changes an acknowledged apply reported applied (not stale).
	applied map[rowVersion]bool
}

// newApplyRecord returns an empty record.
func newApplyRecord() *applyRecord {
	return &applyRecord{acks: map[rowVersion]int{}, applied: map[rowVersion]bool{}}
}

// add records one Apply call: each write acknowledged when err is nil, else failed.
func (r *applyRecord) add(writes []index.RowWrite, out []index.Outcome, err error) {
	for range writes {
		r.log.add(err)
	}
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range writes {
		rv := rowVersion{w.VersionKey, w.Version}
		r.acks[rv]++
		if out[i] == index.Applied {
			r.applied[rv] = true
		}
	}
}

// result returns, against the stored version of each row (version key → version), the
// applied changes whose effect is missing (the stored version is older: the write was lost),
// and the changes acknowledged more than once (redelivered).
func (r *applyRecord) result(stored map[string]index.Version) (lost, redelivered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for rv := range r.applied {
		if stored[rv.key] < rv.version {
			lost++
		}
	}
	for _, n := range r.acks {
		if n > 1 {
			redelivered++
		}
	}
	return lost, redelivered
}
