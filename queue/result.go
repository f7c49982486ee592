package queue

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/redstate/redstate"
)

// resultKey is the context key of a running job's result box.
type resultKey struct{}

// resultBox holds what a handler passed to SetResult.
type resultBox struct {
	mu  sync.Mutex
	raw json.RawMessage
}

// withResultBox returns ctx carrying a fresh result box, and the box.
func withResultBox(ctx context.Context) (context.Context, *resultBox) {
	box := &resultBox{}
	return context.WithValue(ctx, resultKey{}, box), box
}

func (b *resultBox) get() json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.raw
}

// SetResult records the result of the job whose handler got ctx: when the handler succeeds,
// the result is stored in the job's record (jobs enqueued with EnqueueJob; for others it is
// ignored) and kept for the job's retention. The last call wins. Errors: EINVALID (result not
// valid JSON, or ctx is not a handler's).
func SetResult(ctx context.Context, result json.RawMessage) error {
	box, ok := ctx.Value(resultKey{}).(*resultBox)
	if !ok {
		return redstate.Errorf(redstate.EINVALID, "queue.SetResult: ctx is not a job handler's")
	}
	if !json.Valid(result) {
		return redstate.Errorf(redstate.EINVALID, "queue.SetResult: result is not valid JSON")
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	box.raw = append(json.RawMessage(nil), result...)
	return nil
}
