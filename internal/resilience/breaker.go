// Package resilience holds the circuit breaker that guards every call a block makes to Redis
// (docs/resilience.md). Its defaults are those of a Resilience4j "redis" instance, so a Java
// deployment's settings carry over: failure-rate-threshold 50, wait-duration-in-open-state 10s,
// sliding-window-size 10.
//
// The breaker is count based: it opens when at least FailureRateThreshold percent of the last
// SlidingWindowSize calls failed (with the defaults, 5 of the last 10), stays open for
// WaitDurationInOpenState, then half-opens and lets up to SlidingWindowSize trial calls through;
// it closes again once more than SlidingWindowSize minus the failure threshold of them succeed
// (6 of 10), and re-opens once the failure threshold of them fail. Unlike Resilience4j there is
// no separate minimum-number-of-calls: the failure threshold itself (5 failures) is the minimum.
//
// Only connectivity failures count: an error whose code is EUNAVAILABLE. Every other outcome,
// including ENOTFOUND, EINVALID, EPRECONDITION and ECONFLICT, proves Redis answered and counts as
// a success. A call whose context the caller canceled counts as a success too (the caller gave
// up, Redis did not fail), and so does a timeout of a heavy read (DoHeavyRead). While open,
// calls fail at once with an EUNAVAILABLE *redstate.Error (IsRefused).
//
// Recovery follows Redis: a breaker given a probe (WithProbe: in serve a redisconn.Prober) pings
// Redis every ProbeInterval while it is open, one ping at a time, and half-opens as soon as a ping
// answers after a failure the probe sees (Redis unreachable, changing master, short of replicas),
// then pings as its trial calls until it closes (see probe.go). A failover therefore costs the time
// until the client sees the new master, not WaitDurationInOpenState.
//
// An outage is logged three ways, never once per call: when the breaker opens (Warn, with the
// failure that opened it), every outageSummaryEvery while it stays open and calls are refused
// (Warn, with how many), and when it closes again (Info, with the outage's length and the
// calls refused). See outage.go.
package resilience

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/metrics"
)

// State is a breaker state name: metrics.BreakerClosed, metrics.BreakerHalfOpen or
// metrics.BreakerOpen.
type State = string

// Breaker is a circuit breaker for one block's Redis calls. It is safe for concurrent use.
// Close it when done if it was given a probe.
type Breaker struct {
	block  string
	cb     circuitbreaker.CircuitBreaker[any]
	m      *metrics.Metrics
	log    *slog.Logger
	window int
	wait   time.Duration
	now    func() time.Time

	// The probe (nil: none), its interval, and the loop that runs it while the breaker is not
	// closed (see probe.go): wake starts it, stopProbe ends it, stopped closes when it ended.
	probe      Probe
	probeEvery time.Duration
	wake       chan struct{}
	stopProbe  context.CancelFunc
	stopped    chan struct{}

	// mu guards lastFailure, out and the probe's backoff.
	mu sync.Mutex
	// lastFailure is the last call failure recorded, the cause of an opening.
	lastFailure error
	// out is the outage under way (out.since zero: none).
	out outage
	// cuts counts the waits the probe ended since the breaker last stayed closed longer than
	// its wait, and openedAt and closedAt are its last transitions: see probeBackoff.
	cuts               int
	openedAt, closedAt time.Time
}

// BreakerOption configures a Breaker beyond its Options.
type BreakerOption func(*Breaker)

// NewBreaker returns a closed breaker for block configured from cfg (zero fields take the
// defaults). State changes are reported to m (may be nil); outages are logged on log (nil:
// slog.Default()), see the package comment.
func NewBreaker(block string, cfg Options, m *metrics.Metrics, log *slog.Logger, opts ...BreakerOption) (*Breaker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	b := &Breaker{block: block, m: m, log: log, window: cfg.SlidingWindowSize, wait: cfg.WaitDurationInOpenState,
		now: time.Now, probeEvery: cfg.ProbeInterval, stopped: make(chan struct{})}
	window := uint(cfg.SlidingWindowSize)
	failures := uint(math.Ceil(float64(cfg.FailureRateThreshold) * float64(window) / 100))
	failures = max(1, min(failures, window))
	b.cb = circuitbreaker.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return IsFailure(err) }).
		WithFailureThresholdRatio(failures, window).
		WithDelay(cfg.WaitDurationInOpenState).
		OnStateChanged(b.changed).
		Build()
	for _, opt := range opts {
		opt(b)
	}
	m.SetBreakerState(block, metrics.BreakerClosed)
	if b.probe == nil {
		close(b.stopped)
		return b, nil
	}
	b.wake = make(chan struct{}, 1)
	ctx, stop := context.WithCancel(context.Background())
	b.stopProbe = stop
	go b.probeLoop(ctx)
	return b, nil
}

// Close stops the probe loop (if any) and waits for it; the breaker keeps working without its
// probe. Close is idempotent.
func (b *Breaker) Close() {
	if b.stopProbe != nil {
		b.stopProbe()
	}
	<-b.stopped
}

// IsFailure reports whether err counts against the breaker: only EUNAVAILABLE does.
func IsFailure(err error) bool {
	return redstate.IsCode(err, redstate.EUNAVAILABLE)
}

// Do runs fn if the breaker allows a call and records its outcome. When the breaker is open it
// returns an EUNAVAILABLE error without calling fn.
func (b *Breaker) Do(ctx context.Context, fn func() error) error {
	return b.do(ctx, fn, true)
}

// DoIfClosed is Do for a caller that has another answer (a degraded read from SQL, a durable
// repair mark) and so must never wait as a trial call: unless the breaker is closed it fails at
// once with OpenError, and only other callers' Do (a background probe) half-open and close it.
func (b *Breaker) DoIfClosed(ctx context.Context, fn func() error) error {
	if b.State() != metrics.BreakerClosed {
		return b.refuse()
	}
	return b.Do(ctx, fn)
}

// DoHeavyRead is Do for a read whose reply grows with the request (a listing, a batch read):
// its timeouts (rediserr.IsTimeout) count as successes, because they say as much about the size
// of the reply as about Redis, and a burst of large reads must not open the breaker and fail
// every other client's writes. Its other connectivity failures (refused, reset, closed) still
// count, and so do the timeouts of every other call, so a hung Redis still opens the breaker.
func (b *Breaker) DoHeavyRead(ctx context.Context, fn func() error) error {
	return b.do(ctx, fn, false)
}

func (b *Breaker) do(ctx context.Context, fn func() error, countTimeouts bool) error {
	if !b.cb.TryAcquirePermit() {
		return b.refuse()
	}
	err := fn()
	if IsFailure(err) && !errors.Is(ctx.Err(), context.Canceled) && (countTimeouts || !rediserr.IsTimeout(err)) {
		b.mu.Lock()
		b.lastFailure = err
		b.mu.Unlock()
		b.cb.RecordFailure()
	} else {
		b.cb.RecordSuccess()
	}
	return err
}

// refuse counts a call refused while the breaker is open and returns its OpenError.
func (b *Breaker) refuse() error {
	b.refused()
	return b.OpenError()
}

// Allow reports whether a call would be let through now (closed, or half-open with a trial
// permit left, or open with the wait elapsed). It does not consume a permit.
func (b *Breaker) Allow() bool {
	switch b.cb.State() {
	case circuitbreaker.ClosedState, circuitbreaker.HalfOpenState:
		return true
	default:
		return b.cb.RemainingDelay() == 0
	}
}

// OpenError returns the error calls get while the breaker is open (IsRefused reports it). Its
// "retry in" is the longest wait: with a probe, calls resume as soon as Redis answers again.
func (b *Breaker) OpenError() error {
	secs := int(math.Ceil(b.cb.RemainingDelay().Seconds()))
	return redstate.Wrap(redstate.EUNAVAILABLE, circuitbreaker.ErrOpen,
		fmt.Sprintf("redis circuit breaker open; retry in %ds", secs))
}

// IsRefused reports whether err is (or wraps) a breaker's OpenError: the call was not made
// because the breaker is open. Such a refusal is counted and logged by the breaker's outage
// lines, so callers need not log it one by one.
func IsRefused(err error) bool { return errors.Is(err, circuitbreaker.ErrOpen) }

// State returns the breaker's current state.
func (b *Breaker) State() State { return stateName(b.cb.State()) }

// changed reports a transition to the metrics and the outage log, and wakes the probe when
// the breaker opens. failsafe-go calls it without holding its own lock. The failure rate is
// read through the breaker (which takes that lock), never through ev.Metrics(): the event's
// metrics read the previous state's counters unlocked, while a concurrent call's
// RecordFailure writes them (failsafe-go v0.9.8; the race detector caught it).
func (b *Breaker) changed(ev circuitbreaker.StateChangedEvent) {
	from, to := stateName(ev.OldState), stateName(ev.NewState)
	b.m.BreakerTransition(b.block, to)
	b.transition(from, to, b.cb.Metrics().FailureRate())
	if to == metrics.BreakerOpen && b.wake != nil {
		select {
		case b.wake <- struct{}{}:
		default: // already woken
		}
	}
}

func stateName(s circuitbreaker.State) State {
	switch s {
	case circuitbreaker.OpenState:
		return metrics.BreakerOpen
	case circuitbreaker.HalfOpenState:
		return metrics.BreakerHalfOpen
	default:
		return metrics.BreakerClosed
	}
}
