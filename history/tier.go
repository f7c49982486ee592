package history

import (
	"strconv"
	"time"

	"github.com/redstate/redstate"
)

// Tier is one resolution of the history: buckets of Step seconds, Points of them answered by a
// read of its Window, each kept Retention after its start.
type Tier struct {
	// Window is the read window this tier answers: "15m", "1h" or "24h".
	Window string
	// Step is a bucket's length in seconds.
	Step int64
	// Points is how many buckets a read of Window returns.
	Points int
	// Retention is how long a bucket is kept after its start (Redis: EXPIREAT), a little more
	// than Window so that a read never finds its oldest bucket half expired.
	Retention time.Duration
}

// retentionSlack is what a tier keeps beyond its window.
const retentionSlack = time.Minute

// Tiers are the history's resolutions: 15 minutes of 1 s buckets, an hour of 10 s buckets and a
// day of 1 min buckets. Every recorded event is counted into one bucket of each.
var Tiers = []Tier{
	{Window: "15m", Step: 1, Points: 900, Retention: 15*time.Minute + retentionSlack},
	{Window: "1h", Step: 10, Points: 360, Retention: time.Hour + retentionSlack},
	{Window: "24h", Step: 60, Points: 1440, Retention: 24*time.Hour + retentionSlack},
}

// TierOf returns the tier answering window ("15m", "1h" or "24h"). Errors: EINVALID.
func TierOf(window string) (Tier, error) {
	for _, t := range Tiers {
		if t.Window == window {
			return t, nil
		}
	}
	return Tier{}, redstate.Errorf(redstate.EINVALID, "window must be 15m, 1h or 24h, got %q", window)
}

// Start returns the start (Unix seconds) of the bucket holding second sec.
func (t Tier) Start(sec int64) int64 { return sec - mod(sec, t.Step) }

// expiresAt is when the bucket starting at start expires (Unix seconds).
func (t Tier) expiresAt(start int64) int64 { return start + int64(t.Retention/time.Second) }

// StepString is Step as a duration text: "1s", "10s", "1m".
func (t Tier) StepString() string {
	if t.Step%60 == 0 {
		return strconv.FormatInt(t.Step/60, 10) + "m"
	}
	return strconv.FormatInt(t.Step, 10) + "s"
}

// mod is a non-negative remainder.
func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}
