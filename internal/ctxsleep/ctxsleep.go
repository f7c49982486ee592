// Package ctxsleep waits for a duration or a context's end, whichever comes first: the one
// sleep of every background loop that must stop promptly at shutdown.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends; it tells whether the full wait elapsed (false: ctx ended).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
