package queue

import (
	"log/slog"
	"sync"
	"time"
)

// outageReminder is how often a continuing outage is logged again.
const outageReminder = time.Minute

// outageLog turns a stream of backend failures into log lines per state change: one ERROR when
// the backend first fails, a WARN "still unavailable" at most once per outageReminder with the
// failures counted meanwhile, and one INFO when an operation succeeds again. A worker's loops
// (dequeue, heartbeat, promotion, recovery) report into one outageLog, so a Redis outage no
// longer logs an ERROR every second.
type outageLog struct {
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	down     bool
	since    time.Time // start of the outage
	reminded time.Time // last log line of the outage
	failures int       // failures since that line
}

// newOutageLog returns an outageLog writing to log.
func newOutageLog(log *slog.Logger, now func() time.Time) *outageLog {
	return &outageLog{log: log, now: now}
}

// failed records a failed operation (named by op) and logs it if the state changed or a
// reminder is due.
func (o *outageLog) failed(op string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if !o.down {
		o.down, o.since, o.reminded, o.failures = true, now, now, 0
		o.log.Error("queue backend unavailable; retrying", "op", op, "err", err)
		return
	}
	o.failures++
	if now.Sub(o.reminded) >= outageReminder {
		o.log.Warn("queue backend still unavailable", "op", op, "err", err,
			"for", now.Sub(o.since).Round(time.Second), "failures", o.failures)
		o.reminded, o.failures = now, 0
	}
}

// ok records a successful operation, logging the recovery if the backend was down.
func (o *outageLog) ok() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return
	}
	o.down = false
	o.log.Info("queue backend reachable again", "after", o.now().Sub(o.since).Round(time.Millisecond))
}
