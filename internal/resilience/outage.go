package resilience

import (
	"log/slog"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"

	"github.com/redstate/redstate/metrics"
)

// outageSummaryEvery is how often a continuing outage is summarised: at the first call refused
// after it, with the calls refused since the last line.
const outageSummaryEvery = 10 * time.Second

// outage is one outage as a breaker sees it: from its opening to its closing, across trial
// calls that failed and opened it again in between.
type outage struct {
	// since is when the breaker opened (zero: no outage under way).
	since time.Time
	// cause is the call failure that opened the breaker.
	cause error
	// probeMayEnd records that a probe's answer may end the wait (see probe.go): the failure
	// that last opened the breaker is one the probe sees (probeSees), or a probe failed since.
	probeMayEnd bool
	// refused counts the calls refused during the outage; refusedAtSummary is its value at the
	// last summary line, logged at summarized.
	refused          int
	refusedAtSummary int
	summarized       time.Time
}

// transition logs a state change of the breaker as part of an outage: the opening that starts
// one at Warn with its cause, its end at Info with its length and the calls refused, and
// everything in between (half-open trials, an opening again after failed trials) at Debug.
func (b *Breaker) transition(from, to State, failureRate float64) {
	block := slog.String("block", b.block)
	b.mu.Lock()
	now, cause := b.now(), b.lastFailure
	switch to {
	case metrics.BreakerOpen:
		if from == metrics.BreakerClosed && now.Sub(b.closedAt) > b.wait {
			b.cuts = 0 // it stayed closed: no flapping
		}
		b.openedAt = now
		b.out.probeMayEnd = probeSees(cause)
		if !b.out.since.IsZero() {
			b.mu.Unlock()
			b.log.Debug("redis circuit breaker open again: trial calls failed", block, slog.Any("cause", cause))
			return
		}
		b.out = outage{since: now, cause: cause, probeMayEnd: b.out.probeMayEnd, summarized: now}
		b.mu.Unlock()
		b.log.Warn("redis circuit breaker open: calls fail at once until Redis answers again", block,
			slog.Any("cause", cause), slog.Float64("failureRate", failureRate), slog.Duration("maxWait", b.wait),
			slog.Bool("probing", b.probe != nil))
	case metrics.BreakerHalfOpen:
		b.mu.Unlock()
		b.log.Debug("redis circuit breaker half-open: trial calls", block, slog.String("from", from))
	default:
		if b.cb.State() != circuitbreaker.ClosedState {
			// Opened again before this listener ran (failsafe-go calls listeners outside its
			// lock): the outage goes on.
			b.mu.Unlock()
			return
		}
		o := b.out
		b.out = outage{}
		b.closedAt = now
		b.mu.Unlock()
		if o.since.IsZero() {
			return
		}
		b.log.Info("redis circuit breaker closed: Redis answers again", block,
			slog.Duration("outage", now.Sub(o.since).Round(time.Millisecond)), slog.Int("refused", o.refused))
	}
}

// refused counts a call refused during an outage and logs the outage's summary when one is due.
func (b *Breaker) refused() {
	b.mu.Lock()
	b.out.refused++
	now := b.now()
	if b.out.since.IsZero() || now.Sub(b.out.summarized) < outageSummaryEvery {
		b.mu.Unlock()
		return
	}
	n := b.out.refused - b.out.refusedAtSummary
	b.out.summarized, b.out.refusedAtSummary = now, b.out.refused
	o := b.out
	b.mu.Unlock()
	b.log.Warn("redis circuit breaker still open", slog.String("block", b.block),
		slog.Duration("openFor", now.Sub(o.since).Round(time.Second)), slog.Int("refused", n),
		slog.Int("refusedTotal", o.refused), slog.Any("cause", o.cause))
}
