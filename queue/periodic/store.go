package periodic

import (
	"context"
	"fmt"
	"time"

	"github.com/redstate/redstate"
)

// Record is what the tick store holds for one entry: its latest claimed tick.
type Record struct {
	// At is the tick (whole seconds).
	At time.Time
	// Fence is the fence of the leader that last wrote the record.
	Fence int64
	// Done tells that the tick's job was enqueued (Finish); false from Begin until then.
	Done bool
	// Claimed is when the tick was first claimed (Begin, on the claiming leader's clock); a
	// takeover's re-fire keeps it.
	Claimed time.Time
}

// Store keeps each entry's Record, shared by every instance. Every method is one atomic step
// on one entry, and a copy of a call (a client re-sending it) changes nothing more. Errors:
// ErrStale, EUNAVAILABLE (the backend cannot answer now), EINTERNAL (a record that cannot be
// read).
type Store interface {
	// Init writes r as name's record if it has none, and returns the record name has then.
	Init(ctx context.Context, name string, r Record) (Record, error)
	// Begin claims tick at for the leader with fence, at now: unless the record's fence is
	// larger (ErrStale) or the record is past at or done with at (then it returns the record,
	// begun false), the record becomes {at, fence, not done, claimed now}, where a record
	// already at at keeps its Claimed.
	Begin(ctx context.Context, name string, at time.Time, fence int64, now time.Time) (r Record, begun bool, err error)
	// Finish marks tick at done if the record is still {at, fence}; ErrStale otherwise.
	Finish(ctx context.Context, name string, at time.Time, fence int64) error
}

// ErrStale is the class (errors.Is) of a write refused because the record moved on: a leader
// with a larger fence wrote it. The leader that gets it has been taken over.
// Its code is ECONFLICT.
var ErrStale = redstate.Errorf(redstate.ECONFLICT, "periodic: the tick record was written by a newer leader")

// begin applies Begin's rule to cur (found false: no record): the record after it, whether
// the tick was begun, and ErrStale.
func begin(cur Record, found bool, at time.Time, fence int64, now time.Time) (Record, bool, error) {
	if !found {
		return Record{At: at, Fence: fence, Claimed: now}, true, nil
	}
	switch {
	case cur.Fence > fence:
		return cur, false, fmt.Errorf("%w (fence %d above this leader's %d)", ErrStale, cur.Fence, fence)
	case cur.At.After(at), cur.At.Equal(at) && cur.Done:
		return cur, false, nil
	case cur.At.Equal(at):
		return Record{At: at, Fence: fence, Claimed: cur.Claimed}, true, nil
	}
	return Record{At: at, Fence: fence, Claimed: now}, true, nil
}
