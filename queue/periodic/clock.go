package periodic

import (
	"context"
	"time"
)

// Clock tells the scheduler the time and wakes it at a tick. Tests pass a clock they move by
// hand; RealClock is the default.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Wait blocks until the clock reads t or later, or ctx ends (then it returns ctx's error).
	Wait(ctx context.Context, t time.Time) error
}

// RealClock is the machine's clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Wait implements Clock with a timer.
func (RealClock) Wait(ctx context.Context, t time.Time) error {
	for {
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}
