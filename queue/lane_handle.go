package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"
	"unicode/utf8"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/ctxsleep"
)

// handle runs the handler on d and settles the job, except for an ack: when the job is to be
// acked (its handler succeeded, or it was cancelled while running) handle returns the function
// that acks it with ack and reports the outcome, for the caller to run (Process at once, the
// Worker's consume in the background while the handler goroutine takes the next job); it
// returns nil when the job is settled otherwise or left in flight.
func (l *lane) handle(ctx context.Context, d *Delivery) func(ack ackFunc) {
	decodeErr := d.DecodeErr
	if decodeErr == nil && l.cfg.Check != nil {
		decodeErr = l.cfg.Check(d.Message)
	}
	if decodeErr != nil {
		// Not one of the queue's jobs: dead-lettered with the reason (never dropped), so an
		// operator sees it and may requeue it; no handler and no OnDead hook runs.
		l.log.With("raw", d.Raw).Error("queue message malformed; dead-lettering it", "err", decodeErr)
		dead := MalformedDeadLetter(d, decodeErr, l.cfg.Now())
		if l.settle(ctx, "bury", func(c context.Context) error { return l.b.Bury(c, d, dead) }) {
			l.observe(OutcomeMalformed, 0)
		}
		return nil
	}
	m := d.Message
	log := jobLogger{log: l.log, retryCount: m.RetryCount, jobID: m.JobID}
	if m.Job != nil && HasRecord(d.Raw) && !l.startJob(ctx, d, log) {
		return nil
	}
	hctx, box, done := l.handlerContext(ctx, m)
	start := time.Now()
	err := l.call(hctx, d)
	dur := time.Since(start)
	cancelled, lapsed := done()
	if lapsed && err != nil {
		// The lease may have expired and the job may already run at another consumer: settling
		// this interrupted run (a retry, a dead letter) would be wrong. It stays in flight and
		// is delivered again (RecoverExpired, or this worker's in-flight audit).
		log.Warn("queue lease lapsed while the job ran (no heartbeat succeeded for the lease minus one heartbeat period); its handler was stopped and the job will be delivered again",
			"duration", dur, "err", err)
		l.observe(OutcomeLost, dur)
		return nil
	}
	maxRetries, delay := m.Job.retryPolicy(l.cfg.MaxRetries, l.cfg.retryDelay, m.RetryCount)

	switch {
	case cancelled:
		d.Cancelled = true
		return func(ack ackFunc) {
			if l.settle(ctx, "ack", func(c context.Context) error { return ack(c, d) }) {
				log.Info("queue job cancelled while running", "duration", dur, "err", err)
				l.observe(OutcomeCancelled, dur)
			}
		}
	case err == nil:
		d.Result = box.get()
		return func(ack ackFunc) {
			if l.settle(ctx, "ack", func(c context.Context) error { return ack(c, d) }) {
				log.Info("queue job done", "duration", dur)
				l.observe(OutcomeAcked, dur)
				l.observeLatency(m, dur)
			}
		}
	case m.RetryCount < maxRetries && !IsPermanent(err):
		next := m.NextRetry()
		if m.Job != nil {
			next.LastError = truncateReason(err.Error()) // the record's attempt keeps it
		}
		due := l.cfg.Now().Add(delay)
		if l.settle(ctx, "retry", func(c context.Context) error { return l.b.Retry(c, d, next, due) }) {
			log.Warn("queue job failed; retry scheduled", "err", err, "delay", delay, "due", due)
			l.observe(OutcomeRetried, dur)
		}
	default:
		dead := m
		dead.LastError = truncateReason(err.Error())
		dead.FailedAt = l.cfg.Now().UTC().Truncate(time.Second)
		if !l.settle(ctx, "bury", func(c context.Context) error { return l.b.Bury(c, d, dead) }) {
			return nil
		}
		if IsPermanent(err) {
			log.Error("queue job failed permanently; dead-lettered without retrying", "err", err)
		} else {
			log.Error("queue job failed after last retry; dead-lettered", "err", err)
		}
		l.observe(OutcomeDead, dur)
		if l.cfg.OnDead != nil {
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.BlockTimeout)
			defer cancel()
			if herr := l.cfg.OnDead(hctx, m, err); herr != nil {
				// The job stays dead-lettered.
				log.Error("queue dead-letter hook failed", "err", herr)
			}
		}
	}
	return nil
}

// startJob takes a job with a record from pending to active (Broker.StartJob), retrying on
// broker errors like settle. It returns false when the handler must not run: the job was
// cancelled (it is dropped from the in-flight list), the queue is paused (it is back at the head
// of pending), it is no longer in flight, or ctx ended.
func (l *lane) startJob(ctx context.Context, d *Delivery, log jobLogger) bool {
	var verdict JobStart
	if !l.settle(ctx, "start", func(c context.Context) (err error) {
		verdict, err = l.b.StartJob(c, d)
		return err
	}) {
		return false
	}
	switch verdict {
	case JobCancelled:
		log.Info("queue job cancelled before it started; not running it")
		l.observe(OutcomeCancelled, 0)
		return false
	case JobPaused:
		log.Info("queue paused; job put back at the head of the queue")
		return false
	}
	return true
}

// jobLogger logs about one job: the lane's logger with the job's retry count and id. The two
// attributes are added only to a record that is logged: a slog handler formats what With adds at
// once, which would cost every job although most are never logged about.
type jobLogger struct {
	log        *slog.Logger
	retryCount int
	jobID      string
}

// Info, Warn and Error log at their level, like slog.Logger's.
func (j jobLogger) Info(msg string, args ...any)  { j.at(slog.LevelInfo, msg, args) }
func (j jobLogger) Warn(msg string, args ...any)  { j.at(slog.LevelWarn, msg, args) }
func (j jobLogger) Error(msg string, args ...any) { j.at(slog.LevelError, msg, args) }

// at logs msg with args at level if the logger is enabled for it, reporting its caller's
// caller (the line that logged) as the record's source.
func (j jobLogger) at(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if !j.log.Enabled(ctx, level) {
		return
	}
	var pcs [1]uintptr
	runtime.Callers(3, pcs[:]) // runtime.Callers, at, Info/Warn/Error
	r := slog.NewRecord(time.Now(), level, msg, pcs[0])
	r.Add(args...)
	_ = j.log.With("retryCount", j.retryCount, "jobId", j.jobID).Handler().Handle(ctx, r)
}

// errJobCancelled is the cause of a running job's ctx when CancelJob asked it to stop.
var errJobCancelled = redstate.Errorf(redstate.ECONFLICT, "queue job cancelled")

// handlerContext returns the ctx of m's handler, registered among the running jobs (a cancel
// request or a lease lapse stops it), with a result box (SetResult) and, for a job with a
// record, its Timeout. done releases them and tells whether the job was cancelled (CancelJob)
// or stopped by a lease lapse.
func (l *lane) handlerContext(ctx context.Context, m Message) (context.Context, *resultBox, func() (cancelled, lapsed bool)) {
	id := ""
	if m.Job != nil {
		id = m.JobID
	}
	hctx, end := l.running.start(ctx, id)
	stopTimeout := func() {}
	if t := m.Job.Timeout(); t > 0 {
		hctx, stopTimeout = context.WithTimeout(hctx, t)
	}
	hctx, box := withResultBox(hctx)
	return hctx, box, func() (bool, bool) {
		cause := context.Cause(hctx)
		stopTimeout()
		end()
		return errors.Is(cause, errJobCancelled), errors.Is(cause, errLeaseLapsed)
	}
}

// maxReasonBytes bounds the failure reason kept in a dead letter.
const maxReasonBytes = 2048

// truncateReason bounds a failure reason kept in a dead letter, at a UTF-8 boundary.
func truncateReason(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	cut := maxReasonBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// call runs the handler, turning a panic into an error.
func (l *lane) call(ctx context.Context, d *Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("queue handler panic: %v", r)
		}
	}()
	return l.h(ctx, d)
}

// settle runs op (Ack, Retry or Bury) until it succeeds and returns true. It gives up, returning
// false, on ECONFLICT (the job was recovered after a lease expiry and will be redelivered) or
// when ctx ends (the job stays in-flight and is recovered once this consumer's lease lapses).
// Other errors are logged and retried after ErrorDelay.
//
// An attempt that failed without an answer (a timeout, a lost connection) may have been applied
// by the broker all the same, so ECONFLICT after such an attempt most likely means that the
// earlier attempt took effect: settle then returns true. If instead the job was recovered
// meanwhile, it runs again (at least once) and is counted once more.
func (l *lane) settle(ctx context.Context, what string, op func(context.Context) error) bool {
	unanswered := false
	for {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.BlockTimeout)
		err := op(actx)
		cancel()
		switch {
		case err == nil:
			return true
		case redstate.IsCode(err, redstate.ECONFLICT) && unanswered:
			l.log.Info("queue "+what+" retried after an unanswered attempt found the job settled: that attempt took effect", "err", err)
			return true
		case redstate.IsCode(err, redstate.ECONFLICT):
			l.log.Warn("queue "+what+" found the job no longer in flight; it will be redelivered", "err", err)
			l.observe(OutcomeLost, 0)
			return false
		}
		unanswered = true
		l.log.Error("queue "+what+" failed; retrying after delay", "err", err, "delay", l.cfg.ErrorDelay)
		if !ctxsleep.Sleep(ctx, l.cfg.ErrorDelay) {
			return false
		}
	}
}
