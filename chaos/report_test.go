//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/sqlrecords"
	"github.com/redstate/redstate/sqldb"
)

// Report load (the report flow), wired as serve wires a Redis deployment by default: the report
// queue on redisqueue over the run's client, the records in SQL (queue.record-store: sql; an
// SQLite file here), the report Service nudging the Reconciler about failed enqueues, the
// Reconciler running with the product's age and interval, and reportWorkers workers (separate
// processes in production) running the fake generator (reportGen) with report.CheckJob and the
// dead-letter hook report.MarkFailed. reportProducers submit answers for new records; an admin
// regenerates records whose job was dead-lettered. The worker's back-off, lease and error
// delays are shortened so that a phase settles in seconds.
const (
	reportProducers   = 2
	reportPause       = 10 * time.Millisecond
	reportWorkers     = 2
	reportConcurrency = 2
	reportWork        = 5 * time.Millisecond
	reportLease       = 3 * time.Second
	reportAdminPause  = 50 * time.Millisecond
	// reportDrain bounds each wait for the acknowledged submissions to reach status 4 or 5.
	reportDrain = 30 * time.Second
	// reportQuiet is how long the queue must hold no job (pending, running or retrying) and
	// the reconciler no nudge before a wait gives up early: nothing is left to deliver.
	reportQuiet = 2 * time.Second
	// reportAge stands in for queue.reconciler.age (10 min) in settle's reconciler pass.
	reportAge = time.Second
	// reportNamespace prefixes the report queue's keys (cfg.Namespace in serve), so that they
	// never equal another block's keys under the same tag.
	reportNamespace = "chaos-report-"
)

// reportBlock is the report flow under load: its queue is named after r.tags[3] (the keys
// carry the name as hash tag), so the faults hit its shard.
var reportBlock = block{name: "report", setup: func(t *testing.T, r *run) func(int) load {
	broker, err := redisqueue.New(r.rdb, redisqueue.Options{Namespace: reportNamespace})
	if err != nil {
		t.Fatalf("redisqueue.New: %v", err)
	}
	records := newReportRecords(t)
	// Record ids are unique across runs: a run's queue may still hold an earlier run's jobs.
	base := time.Now().Unix() % 100000 * 1e10
	retries := newRetryLog()
	return func(phase int) load {
		return newReportLoad(t, broker, records, retries, r.tags[3], base+int64(phase)*1e7)
	}
}}

// newReportRecords returns the SQL record store on a new SQLite file in t.TempDir().
func newReportRecords(t *testing.T) *sqlrecords.Store {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "redstate.db"))
	if err != nil {
		t.Fatalf("sqldb.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := sqlrecords.New(ctx, db, sqlrecords.Options{})
	if err != nil {
		t.Fatalf("sqlrecords.New: %v", err)
	}
	return s
}

// reportLoad is the report load model of one phase.
type reportLoad struct {
	broker  *redisqueue.Broker
	records report.RecordStore
	queue   string
	svc     *report.Service
	rc      *report.Reconciler
	gen     *reportGen
	// first is the phase's first record id; it also names the phase's consumers.
	first int64
	// quiet discards the product's logs (the rows count what they would report).
	quiet *slog.Logger
	// log records the submits, rlog the regenerations.
	log, rlog opLog

	mu sync.Mutex
	// submitted are the records whose Submit was acknowledged; regenerated those whose
	// Regenerate was.
	submitted, regenerated []int64
	// staleS and staleR count the acknowledged submissions and regenerations not in status 4
	// or 5 once the queue held nothing more, before settle's reconciler pass.
	staleS, staleR int
	// reenqueued is how many records that pass enqueued again.
	reenqueued int
	// errs are the errors of Submit and Regenerate that are not EUNAVAILABLE (a Redis outage
	// must answer 503, never 500), described.
	errs []string
}

// newReportLoad returns the report load of a phase whose record ids start at first.
func newReportLoad(t *testing.T, b *redisqueue.Broker, records report.RecordStore, retries *retryLog, name string, first int64) *reportLoad {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rc, err := report.NewReconciler(b, records, report.ReconcilerSettings{Queue: name, Logger: quiet})
	if err != nil {
		t.Fatalf("report.NewReconciler: %v", err)
	}
	svc, err := report.NewService(b, records, report.Options{Queue: name, Logger: quiet, Nudger: rc})
	if err != nil {
		t.Fatalf("report.NewService: %v", err)
	}
	return &reportLoad{broker: b, records: records, queue: name, svc: svc, rc: rc, gen: newReportGen(records, reportWork, quiet, retries),
		first: first, quiet: quiet}
}

// start runs the producers and the admin on produce, and the workers and the reconciler on
// work.
func (l *reportLoad) start(produce, work context.Context, producers, workers *sync.WaitGroup) {
	for p := range reportProducers {
		producers.Go(func() { l.submit(produce, int64(p)) })
	}
	producers.Go(func() { l.regenerate(produce) })
	for w := range reportWorkers {
		spec := report.DefaultQueueSpec()
		spec.Name = l.queue
		cfg := spec.Worker()
		cfg.ConsumerID = fmt.Sprintf("chaos-report-%d-w%d", l.first, w)
		cfg.Concurrency = reportConcurrency
		cfg.BlockTimeout = 500 * time.Millisecond
		cfg.ErrorDelay = 200 * time.Millisecond
		cfg.RetryDelays = []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, time.Second}
		cfg.Lease = reportLease
		cfg.ShutdownTimeout = 2 * time.Second
		cfg.Logger = l.quiet
		cfg.Check, cfg.OnDead = report.CheckJob, l.gen.onDead
		wk, err := queue.NewWorker(l.broker, l.gen.handle, cfg)
		if err != nil {
			panic(fmt.Sprintf("queue.NewWorker: %v", err)) // a constant configuration
		}
		workers.Go(func() { _ = wk.Run(work) })
	}
	workers.Go(func() { _ = l.rc.Run(work) })
}

// submit submits answers for new records, ids first+producer, first+producer+reportProducers,
// …, until ctx ends.
func (l *reportLoad) submit(ctx context.Context, producer int64) {
	for id := l.first + producer; ctx.Err() == nil; id += reportProducers {
		answers := json.RawMessage(fmt.Sprintf(`{"a":%d,"b":[1,2,3]}`, id%5))
		opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := l.svc.Submit(opCtx, id, answers)
		cancel()
		if ctx.Err() != nil {
			return // outcome unknown
		}
		l.log.add(err)
		l.mu.Lock()
		if err == nil {
			l.submitted = append(l.submitted, id)
		} else if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			l.errs = append(l.errs, fmt.Sprintf("submit %d: %v", id, err))
		}
		l.mu.Unlock()
		time.Sleep(reportPause)
	}
}

// regenerate is the admin: every reportAdminPause it regenerates the oldest record whose job
// was dead-lettered (Service.Regenerate, the admin route), until ctx ends.
func (l *reportLoad) regenerate(ctx context.Context) {
	for ctx.Err() == nil {
		sleepCtx(ctx, reportAdminPause)
		id, ok := l.gen.nextRegeneration()
		if !ok {
			continue
		}
		opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := l.svc.Regenerate(opCtx, id)
		cancel()
		if ctx.Err() != nil {
			return
		}
		l.rlog.add(err)
		l.mu.Lock()
		if err == nil {
			l.regenerated = append(l.regenerated, id)
		} else if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			l.errs = append(l.errs, fmt.Sprintf("regenerate %d: %v", id, err))
		}
		l.mu.Unlock()
	}
}

// settle waits until the queue delivered everything it holds, counts the acknowledged
// submissions and regenerations still in status 3 (stale: their job was lost with the
// failover, or is still to come), then runs the documented repair — the reconciler's
// age-based pass, which serve runs every queue.reconciler.interval for records in status 3
// for queue.reconciler.age (10 min; here reportAge) with no job anywhere in the queue — and
// waits again.
func (l *reportLoad) settle(t *testing.T) {
	t.Helper()
	l.drain()
	submitted, regenerated := l.acked()
	l.staleS, l.staleR = l.unfinished(t, submitted, regenerated)
	rc, err := report.NewReconciler(l.broker, l.records, report.ReconcilerSettings{Queue: l.queue, Age: reportAge, Logger: l.quiet})
	if err != nil {
		t.Fatalf("report.NewReconciler: %v", err)
	}
	deadline := time.Now().Add(failoverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		n, err := rc.ReconcileOnce(ctx)
		cancel()
		l.reenqueued += n
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("report reconciler: still failing after %v: %v", failoverTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.drain()
}

// acked returns the acknowledged submissions and regenerations.
func (l *reportLoad) acked() (submitted, regenerated []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.submitted...), append([]int64(nil), l.regenerated...)
}

// drain waits until the queue holds no job (pending, running or retrying) and no nudge is
// pending, and either every acknowledged submission and regeneration reached status 4 or 5
// through the workers or the queue stayed so for reportQuiet (nothing is left to deliver); or
// until reportDrain passed. Waiting for the empty queue keeps a phase's redeliveries (copies a
// failover brought back) out of the next phase.
func (l *reportLoad) drain() {
	deadline := time.Now().Add(reportDrain)
	var emptySince time.Time
	for time.Now().Before(deadline) {
		if !l.queueEmpty() {
			emptySince = time.Time{}
		} else {
			if emptySince.IsZero() {
				emptySince = time.Now()
			}
			s, r := l.acked()
			if l.allDone(s) && l.allDone(r) || time.Since(emptySince) >= reportQuiet {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allDone reports whether every record of ids reached a terminal status through the workers.
func (l *reportLoad) allDone(ids []int64) bool {
	for _, id := range ids {
		if !l.gen.done(id) {
			return false
		}
	}
	return true
}

// queueEmpty reports whether the report queue holds no pending, running or retrying job and
// the reconciler no nudged record.
func (l *reportLoad) queueEmpty() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := l.broker.Stats(ctx, l.queue)
	return err == nil && st.Pending+st.Running+st.Retrying == 0 && len(l.rc.Nudged()) == 0
}

// unfinished returns how many of the submitted and the regenerated records are, in the
// record store (the truth), neither in status 4 nor in status 5.
func (l *reportLoad) unfinished(t *testing.T, submitted, regenerated []int64) (s, r int) {
	t.Helper()
	for _, id := range submitted {
		if st := l.status(t, id); st != report.StatusDone && st != report.StatusFailed {
			s++
		}
	}
	for _, id := range regenerated {
		if st := l.status(t, id); st != report.StatusDone && st != report.StatusFailed {
			r++
		}
	}
	return s, r
}

// status returns the status of record id in the record store (0 when it does not exist).
func (l *reportLoad) status(t *testing.T, id int64) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := l.records.Get(ctx, id)
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		return 0
	}
	if err != nil {
		t.Fatalf("read record %d: %v", id, err)
	}
	return rec.Status
}

// rows reports the submissions and the regenerations. lost counts the acknowledged ones not in
// status 4 or 5 after the reconciler pass, stale those that were not before it; diffs counts
// records whose final status is not their fate's (a regenerated or non-permanent record not in
// status 4, a permanent one neither regenerated nor in status 5) or that are in status 4
// without a generation; dups and concurrent count generations (see reportGen).
func (l *reportLoad) rows(t *testing.T, faultAt time.Time) []row {
	t.Helper()
	submitted, regenerated := l.acked()
	lostS, lostR := l.unfinished(t, submitted, regenerated)
	s := newRow("report submit")
	s.acked, s.failed = l.log.counts()
	s.lost, s.stale = lostS, l.staleS
	s.dups, s.concurrent = l.gen.counts(submitted)
	s.diffs = l.diffs(t, submitted)
	s.recovery = recovered(t, &l.log, faultAt, s.block)
	g := newRow("report regenerate")
	g.acked, g.failed = l.rlog.counts()
	g.lost, g.stale = lostR, l.staleR
	g.diffs = l.diffs(t, regenerated)
	if g.acked+g.failed > 0 {
		g.recovery = recovered(t, &l.rlog, faultAt, g.block)
	}
	if lostS+lostR > 0 {
		l.explainLost(t, append(submitted, regenerated...))
	}
	if n := l.reenqueued; n > 0 {
		t.Logf("report: the reconciler's pass re-enqueued %d records stranded in status 3", n)
	}
	l.mu.Lock()
	for _, e := range l.errs {
		t.Errorf("report: an error other than unavailable: %s", e)
	}
	l.mu.Unlock()
	for _, v := range l.gen.retries.take() {
		t.Errorf("report: a retry did not follow its previous attempt with RetryCount one lower (queue property 3): %s", v)
	}
	return []row{s, g}
}

// diffs counts the records of ids whose final status is not the one their fate and the
// admin's regenerations call for, or that are in status 4 without a generation. A record still
// in status 3 counts as lost, not here; one whose regeneration failed may be in status 4 or 5
// (the reset may or may not have been applied).
func (l *reportLoad) diffs(t *testing.T, ids []int64) int {
	t.Helper()
	_, regenerated := l.acked()
	acked := map[int64]bool{}
	for _, id := range regenerated {
		acked[id] = true
	}
	n := 0
	for _, id := range ids {
		got := l.status(t, id)
		switch {
		case got == report.StatusGenerating:
		case got == report.StatusDone && l.gen.generated(id) == 0:
			n++
		case fateOf(id) != fatePermanent || acked[id]:
			if got != report.StatusDone {
				n++
			}
		case !l.gen.isRegenerated(id):
			if got != report.StatusFailed {
				n++
			}
		}
	}
	return n
}

// explainLost logs, for up to five records not in status 4 or 5, their status and whether the
// queue has a job for them, and the queue's counts.
func (l *reportLoad) explainLost(t *testing.T, ids []int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := l.broker.Stats(ctx, l.queue)
	t.Logf("report: queue %s: %+v %v; nudged %d", l.queue, st, err, len(l.rc.Nudged()))
	shown := 0
	for _, id := range ids {
		rec, err := l.records.Get(ctx, id)
		if err == nil && (rec.Status == report.StatusDone || rec.Status == report.StatusFailed) {
			continue
		}
		has, herr := l.broker.HasJob(ctx, l.queue, report.IsJobFor(id))
		t.Logf("report: record %d not finished: %+v %v; job in the queue: %v %v; generated %d", id, rec, err, has, herr, l.gen.generated(id))
		if shown++; shown == 5 {
			return
		}
	}
}
