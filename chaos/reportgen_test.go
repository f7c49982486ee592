//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

// reportFate is what the fake report generator does with a record, fixed by its id.
type reportFate int

const (
	// fateDone: the report is generated on the first attempt.
	fateDone reportFate = iota
	// fateTransient: the first attempt (RetryCount 0) fails with a plain error, so the job is
	// retried after the worker's back-off; the retry generates the report.
	fateTransient
	// fatePermanent: every attempt fails with queue.Permanent (the job is dead-lettered at once
	// and the record set to status 5) until an admin regenerates the record (the cause was
	// fixed): the regenerated job generates the report.
	fatePermanent
)

// fateOf returns the fate of record id: 1 in 20 fails permanently, 1 in 4 of the others once.
func fateOf(id int64) reportFate {
	switch {
	case id%20 == 0:
		return fatePermanent
	case id%4 == 1:
		return fateTransient
	}
	return fateDone
}

// errTransient is the fake generator's retryable failure.
var errTransient = errors.New("chaos: report generator failed transiently")

// reportGen is the fake report generator: the product's report.Generator (it reads the
// record, skips one already in status 4 and stores the report with SetResult) behind a fate
// decided by record id, counting every generation (a run of report.Generator past its status
// check: OnRun) per record, generations of one record that overlapped, the records that
// reached a terminal status through this generator or the dead-letter hook; every delivery
// goes to the run's retryLog (queue property 3: a retry increments RetryCount).
type reportGen struct {
	records report.RecordStore
	logger  *slog.Logger
	// work is report.Generator's Delay, the work time of one generation.
	work time.Duration

	mu         sync.Mutex
	runs       map[int64]int
	running    map[int64]int
	concurrent int
	terminal   map[int64]bool
	// regenerated are the records an admin regenerated: they generate whatever their fate.
	regenerated map[int64]bool
	// dead are the records of fate fatePermanent dead-lettered and not regenerated yet, oldest
	// first: the admin's candidates.
	dead []int64
	// retries checks queue property 3 (a retry increments RetryCount) over the run.
	retries *retryLog
}

// newReportGen returns a fake generator on records, logging to logger and checking retries
// with retries.
func newReportGen(records report.RecordStore, work time.Duration, logger *slog.Logger, retries *retryLog) *reportGen {
	return &reportGen{records: records, logger: logger, work: work, retries: retries, runs: map[int64]int{}, running: map[int64]int{},
		terminal: map[int64]bool{}, regenerated: map[int64]bool{}}
}

// handle is the queue.Handler of the report workers.
func (g *reportGen) handle(ctx context.Context, d *queue.Delivery) error {
	id, err := report.RecordIDOf(d.Message)
	if err != nil {
		return queue.Permanent(err)
	}
	g.retries.check(id, d.Message)
	switch fateOf(id) {
	case fatePermanent:
		if !g.isRegenerated(id) {
			return queue.Permanent(fmt.Errorf("chaos: report of record %d cannot be generated", id))
		}
	case fateTransient:
		if d.Message.RetryCount == 0 {
			return errTransient
		}
	}
	started := false
	gen := report.Generator{Records: g.records, Delay: g.work, Logger: g.logger, OnRun: func(int64, int) {
		started = true
		g.mu.Lock()
		g.runs[id]++
		g.running[id]++
		if g.running[id] > 1 {
			g.concurrent++
		}
		g.mu.Unlock()
	}}
	err = gen.Handle(ctx, d)
	g.mu.Lock()
	defer g.mu.Unlock()
	if started {
		g.running[id]--
	}
	if err == nil {
		g.terminal[id] = true // status 4: stored now, or already (a redelivery)
	}
	return err
}

// onDead is the workers' dead-letter hook: report.MarkFailed (status 5), noting the record.
func (g *reportGen) onDead(ctx context.Context, m queue.Message, cause error) error {
	if err := report.MarkFailed(g.records)(ctx, m, cause); err != nil {
		return err
	}
	if id, err := report.RecordIDOf(m); err == nil {
		g.mu.Lock()
		if !g.terminal[id] && !g.regenerated[id] {
			g.dead = append(g.dead, id)
		}
		g.terminal[id] = true
		g.mu.Unlock()
	}
	return nil
}

// isRegenerated reports whether an admin regenerated record id.
func (g *reportGen) isRegenerated(id int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.regenerated[id]
}

// nextRegeneration takes the oldest dead-lettered record not regenerated yet and marks it
// regenerated and no longer terminal (its generation is due again); ok is false when there
// is none.
func (g *reportGen) nextRegeneration() (id int64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.dead) == 0 {
		return 0, false
	}
	id, g.dead = g.dead[0], g.dead[1:]
	g.regenerated[id] = true
	g.terminal[id] = false
	return id, true
}

// retryLog checks queue property 3 (a retry increments RetryCount) over a whole run (a job's retry
// may be delivered in the phase after its first attempt): it records every delivery and notes a
// violation when a retry (RetryCount k > 0) follows no delivery of the same job with RetryCount
// k-1, or changed its RecordId or EnqueueTime.
type retryLog struct {
	mu sync.Mutex
	// attempts are the deliveries seen per JobID: RetryCount → the message.
	attempts map[string]map[int]queue.Message
	// violations are the violations not yet reported, described.
	violations []string
}

// newRetryLog returns an empty retryLog.
func newRetryLog() *retryLog { return &retryLog{attempts: map[string]map[int]queue.Message{}} }

// check records the delivery m of record id.
func (l *retryLog) check(id int64, m queue.Message) {
	if m.JobID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.attempts[m.JobID]
	if seen == nil {
		seen = map[int]queue.Message{}
		l.attempts[m.JobID] = seen
	}
	seen[m.RetryCount] = m
	if m.RetryCount == 0 {
		return
	}
	prev, ok := seen[m.RetryCount-1]
	if !ok {
		l.violations = append(l.violations, fmt.Sprintf("job %s of record %d delivered with RetryCount %d, never with %d", m.JobID, id, m.RetryCount, m.RetryCount-1))
		return
	}
	if prevID, _ := report.RecordIDOf(prev); prevID != id || !prev.EnqueueTime.Equal(m.EnqueueTime) {
		l.violations = append(l.violations, fmt.Sprintf("job %s: retry changed RecordId %d → %d or EnqueueTime %v → %v", m.JobID, prevID, id, prev.EnqueueTime, m.EnqueueTime))
	}
}

// take returns the violations noted since the last call.
func (l *retryLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.violations
	l.violations = nil
	return v
}

// done reports whether record id reached a terminal status through the workers.
func (g *reportGen) done(id int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.terminal[id]
}

// counts returns how many of ids were generated more than once (dups) and how many
// generations overlapped another of the same record (concurrent, over every record).
func (g *reportGen) counts(ids []int64) (dups, concurrent int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		if g.runs[id] > 1 {
			dups++
		}
	}
	return dups, g.concurrent
}

// generated returns how often record id was generated.
func (g *reportGen) generated(id int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[id]
}
