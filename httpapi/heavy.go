package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/redstate/redstate"
)

// Defaults of the heavy-read bounds.
const (
	// DefaultMaxHeavyReads bounds the heavy reads served at once when Config.MaxHeavyReads is 0.
	DefaultMaxHeavyReads = 8
	// DefaultHeavyReadWait is how long a heavy read waits for a slot when Config.HeavyReadWait
	// is 0.
	DefaultHeavyReadWait = 5 * time.Second
	// DefaultChunkWriteTimeout bounds writing one chunk of a streamed response when
	// Config.ChunkWriteTimeout is 0.
	DefaultChunkWriteTimeout = 10 * time.Second
	// heavyReadBuilds: a listing or batch read that may answer more builds than this is heavy.
	heavyReadBuilds = 100
)

// heavyReads bounds the listings and batch reads that may answer many builds (more than
// heavyReadBuilds) served at once, so that large replies neither starve Redis and the
// connection pool of the small calls nor fill the process's memory. A heavy read waits up to
// wait for a slot, then is refused.
type heavyReads struct {
	slots chan struct{}
	wait  time.Duration
}

// newHeavyReads returns a limiter of max concurrent heavy reads.
func newHeavyReads(max int, wait time.Duration) *heavyReads {
	return &heavyReads{slots: make(chan struct{}, max), wait: wait}
}

// acquire takes a slot for a heavy read, waiting up to h.wait, and returns its release
// function. Errors: ETOOMANYREQUESTS (no slot freed in time; Retry-After 1 s), or the context's
// error wrapped as EUNAVAILABLE when the client went away while waiting.
func (h *heavyReads) acquire(ctx context.Context) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
		return h.release, nil
	default:
	}
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return h.release, nil
	case <-t.C:
		return nil, redstate.Wrap(ETOOMANYREQUESTS, retryAfter(time.Second),
			"this server is answering the most large reads it serves at once ("+strconv.Itoa(cap(h.slots))+
				", server.max-heavy-reads); retry later or ask for smaller pages")
	case <-ctx.Done():
		return nil, redstate.Wrap(redstate.EUNAVAILABLE, ctx.Err(), "request canceled while waiting to be served")
	}
}

func (h *heavyReads) release() { <-h.slots }

// inUse returns the heavy reads being served.
func (h *heavyReads) inUse() int { return len(h.slots) }

// heavySlot takes a heavy-read slot when a read may answer more than heavyReadBuilds builds,
// and returns the function that gives it back (a no-op for a light read).
func (s *server) heavySlot(r *http.Request, builds int) (release func(), err error) {
	if builds <= heavyReadBuilds {
		return func() {}, nil
	}
	return s.heavy.acquire(r.Context())
}
