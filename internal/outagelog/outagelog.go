// Package outagelog turns a stream of "backend unavailable" failures into log lines per state
// change, so that an outage of Redis does not log one ERROR per request or per retry loop.
package outagelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultReminder is how often a continuing outage is logged again.
const DefaultReminder = time.Minute

// Log records failures and successes of one backend as seen by one component. The first
// failure of an outage is logged at ERROR with its details; later ones only at DEBUG, except a
// WARN reminder at most once per Reminder with the failures counted since; the first success
// after an outage is logged at INFO with the outage's length. A backend that fails and answers
// by turns (one shard of a Cluster down, calls to the others succeeding) is one incident: an
// outage that starts within Reminder of the last one logged at ERROR is logged, with its
// recovery, at DEBUG, and its failures are counted into the next line. Safe for concurrent use.
type Log struct {
	log      *slog.Logger
	what     string
	reminder time.Duration
	now      func() time.Time

	mu       sync.Mutex
	down     bool
	since    time.Time
	reminded time.Time
	failures int
	// loudAt is when the last outage logged at ERROR started; quiet marks an outage under way
	// that started within reminder of it.
	loudAt time.Time
	quiet  bool
}

// New returns a Log writing to log; what names the backend in the recovery and reminder lines
// (e.g. "queue backend").
func New(log *slog.Logger, what string) *Log {
	return NewWithClock(log, what, DefaultReminder, time.Now)
}

// NewWithClock is New with an explicit reminder interval and clock (tests).
func NewWithClock(log *slog.Logger, what string, reminder time.Duration, now func() time.Time) *Log {
	return &Log{log: log, what: what, reminder: reminder, now: now}
}

// Failed records a failure: msg, err and attrs are logged at ERROR when it starts an outage,
// at WARN (with the outage's length and failure count) when a reminder is due, else at DEBUG.
func (o *Log) Failed(ctx context.Context, msg string, err error, attrs ...slog.Attr) {
	o.mu.Lock()
	now := o.now()
	level := slog.LevelDebug
	switch {
	case !o.down && !o.loudAt.IsZero() && now.Sub(o.loudAt) < o.reminder:
		o.down, o.since, o.quiet = true, now, true
		o.failures++
	case !o.down:
		if o.failures > 0 { // failures of quiet outages since the last line
			attrs = append(attrs, slog.Int("failuresSinceLastLine", o.failures))
		}
		o.down, o.since, o.reminded, o.failures, o.loudAt, o.quiet = true, now, now, 0, now, false
		level = slog.LevelError
	case now.Sub(o.reminded) >= o.reminder:
		o.failures++
		attrs = append(attrs, slog.String("unavailable_for", now.Sub(o.since).Round(time.Second).String()),
			slog.Int("failures", o.failures))
		msg = o.what + " still unavailable: " + msg
		o.reminded, o.failures = now, 0
		level = slog.LevelWarn
	default:
		o.failures++
	}
	o.mu.Unlock()
	o.log.LogAttrs(ctx, level, msg, append(attrs, slog.Any("err", err))...)
}

// OK records a success, logging the recovery if an outage was under way.
func (o *Log) OK(ctx context.Context) {
	o.mu.Lock()
	if !o.down {
		o.mu.Unlock()
		return
	}
	o.down = false
	after := o.now().Sub(o.since).Round(time.Millisecond)
	level := slog.LevelInfo
	if o.quiet {
		level = slog.LevelDebug
	}
	o.mu.Unlock()
	o.log.LogAttrs(ctx, level, o.what+" reachable again", slog.String("after", after.String()))
}
