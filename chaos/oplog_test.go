//go:build chaos

package chaos

import (
	"sync"
	"time"
)

// opLog records when each write of a load model completed and whether it was acknowledged.
type opLog struct {
	mu  sync.Mutex
	ops []op
	// lastErr is the error of the last failed write, for the failure message.
	lastErr error
}

// op is one completed write.
type op struct {
	at time.Time
	ok bool
}

// add records a completed write: acknowledged when err is nil.
func (l *opLog) add(err error) {
	l.mu.Lock()
	l.ops = append(l.ops, op{time.Now(), err == nil})
	if err != nil {
		l.lastErr = err
	}
	l.mu.Unlock()
}

// recovery returns how long after from the writes were acknowledged again: from from to the
// first acknowledged write after the last failed one (0 when no write failed after from),
// and whether such a write exists.
func (l *opLog) recovery(from time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lastFail time.Time
	for _, o := range l.ops {
		if !o.ok && o.at.After(from) {
			lastFail = o.at
		}
	}
	if lastFail.IsZero() {
		return 0, true
	}
	for _, o := range l.ops {
		if o.ok && o.at.After(lastFail) {
			return o.at.Sub(from), true
		}
	}
	return 0, false
}

// counts returns how many writes were acknowledged and how many failed.
func (l *opLog) counts() (acked, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.ops {
		if o.ok {
			acked++
		} else {
			failed++
		}
	}
	return acked, failed
}
