package report_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
)

// refusingBroker fails Enqueue with the EINTERNAL error a Redis ACL refusal used to map to.
type refusingBroker struct{ queue.Broker }

func (refusingBroker) Enqueue(context.Context, string, queue.Message) error {
	return redstate.Wrap(redstate.EINTERNAL, errors.New("NOPERM no permissions to run 'lpush'"), "enqueue: unexpected Redis reply")
}

// TestAdmin_RegenerateEnqueueFailureIsUnavailableAndNudges: when the reset succeeded and only
// the enqueue failed, Regenerate answers EUNAVAILABLE (503) saying the reconciler will enqueue
// the record, whatever code the broker's error had, and nudges the reconciler.
func TestAdmin_RegenerateEnqueueFailureIsUnavailableAndNudges(t *testing.T) {
	rs := memrecords.New(memrecords.Options{})
	ctx := context.Background()
	if _, err := rs.Create(ctx, 7, report.StatusFailed, nil); err != nil {
		t.Fatal(err)
	}
	b := refusingBroker{memqueue.NewBroker(memqueue.Options{})}
	r, err := report.NewReconciler(b, rs, report.ReconcilerSettings{Age: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	a, err := report.NewAdmin(b, rs, report.Options{Nudger: r})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Regenerate(ctx, 7)
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) || !strings.Contains(redstate.ErrorMessage(err), "the reconciler will enqueue it") {
		t.Fatalf("Regenerate with a failing enqueue = %v (code %s), want EUNAVAILABLE naming the reconciler", err, redstate.ErrorCode(err))
	}
	if rec, _ := rs.Get(ctx, 7); rec.Status != report.StatusGenerating {
		t.Fatalf("record status %d, want 3", rec.Status)
	}
	if got := r.Nudged(); len(got) != 1 || got[0] != 7 {
		t.Fatalf("nudged = %v, want [7]", got)
	}
}

// TestReconciler_NudgedRecordEnqueuedPromptlyWhateverItsAge: a nudged record is enqueued by
// Run as soon as the broker answers, retrying every NudgeRetryInterval, although it is far
// younger than Age; then it is forgotten.
func TestReconciler_NudgedRecordEnqueuedPromptlyWhateverItsAge(t *testing.T) {
	fb := &queuetest.FlakyBroker{Broker: memqueue.NewBroker(memqueue.Options{})}
	rs := memrecords.New(memrecords.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := rs.Submit(ctx, 3, nil); err != nil {
		t.Fatal(err)
	}
	r, err := report.NewReconciler(fb, rs, report.ReconcilerSettings{Age: time.Hour, Interval: time.Hour, NudgeRetryInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fb.FailEnqueue.Store(3) // the broker is "down" for the first three attempts
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	r.Nudge(3)
	deadline := time.Now().Add(20 * time.Second)
	for {
		has, err := fb.HasJob(ctx, report.DefaultQueue, report.IsJobFor(3))
		if err != nil {
			t.Fatal(err)
		}
		if has && len(r.Nudged()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nudged record not enqueued (nudged %v, job %v)", r.Nudged(), has)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if fb.FailEnqueue.Load() >= 0 {
		t.Fatalf("enqueue attempts left %d: the failing attempts were not all used", fb.FailEnqueue.Load())
	}
	cancel()
	<-done
	st, err := fb.Stats(context.Background(), report.DefaultQueue)
	if err != nil || st.Pending != 1 {
		t.Fatalf("pending = %+v, %v; want exactly one job", st, err)
	}
}

// TestReconciler_NudgeSettlesWithoutEnqueueWhenNotNeeded: a nudged record that left status 3
// or is gone is forgotten without a new job; one that already has a job gets no new job.
func TestReconciler_NudgeSettlesWithoutEnqueueWhenNotNeeded(t *testing.T) {
	b, rs := memqueue.NewBroker(memqueue.Options{}), memrecords.New(memrecords.Options{})
	ctx := context.Background()
	if _, err := rs.Submit(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Enqueue(ctx, report.DefaultQueue, report.NewJob(1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Create(ctx, 2, report.StatusDone, nil); err != nil {
		t.Fatal(err)
	}
	r, err := report.NewReconciler(b, rs, report.ReconcilerSettings{Age: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2, 99} {
		r.Nudge(id)
	}
	if n, err := r.ReconcileNudged(ctx); err != nil || n != 0 {
		t.Fatalf("ReconcileNudged = %d, %v; want 0", n, err)
	}
	if got := r.Nudged(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("still nudged: %v; want [1] (status 3 with a job: watched)", got)
	}
	if st, _ := b.Stats(ctx, report.DefaultQueue); st.Pending != 1 {
		t.Fatalf("pending %d, want 1", st.Pending)
	}
}

// TestReconciler_NudgedRecordWhoseJobIsLostIsEnqueued: a failed enqueue may have reached only
// the Redis master (a timeout, or WAIT short of redis.durability.wait-replicas), so the nudge
// finds a job that a failover then loses. The record stays watched while it is in status 3
// and is enqueued once its job is gone; it is forgotten when it leaves status 3, or after Age.
func TestReconciler_NudgedRecordWhoseJobIsLostIsEnqueued(t *testing.T) {
	b, rs := memqueue.NewBroker(memqueue.Options{}), memrecords.New(memrecords.Options{})
	ctx := context.Background()
	now := time.Now()
	clock := func() time.Time { return now }
	for _, id := range []int64{1, 2, 3} {
		if _, err := rs.Submit(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Enqueue(ctx, report.DefaultQueue, report.NewJob(id, now, nil)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := report.NewReconciler(b, rs, report.ReconcilerSettings{Age: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	r.Nudge(1)
	r.Nudge(2)
	if n, err := r.ReconcileNudged(ctx); err != nil || n != 0 {
		t.Fatalf("ReconcileNudged with the jobs queued = %d, %v; want 0", n, err)
	}
	// The failover loses the pending jobs; record 2 meanwhile got its report.
	if err := b.Heartbeat(ctx, report.DefaultQueue, "c", time.Minute); err != nil {
		t.Fatal(err)
	}
	ds, err := b.DequeueBatch(ctx, report.DefaultQueue, "c", 3, time.Second)
	if err != nil || len(ds) != 3 {
		t.Fatalf("DequeueBatch = %d, %v", len(ds), err)
	}
	for _, d := range ds {
		if err := b.Ack(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rs.SetResult(ctx, 2, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if n, err := r.ReconcileNudged(ctx); err != nil || n != 1 {
		t.Fatalf("ReconcileNudged after the loss = %d, %v; want record 1 enqueued", n, err)
	}
	if got := r.Nudged(); len(got) != 0 {
		t.Fatalf("still nudged: %v", got)
	}
	if has, _ := b.HasJob(ctx, report.DefaultQueue, report.IsJobFor(1)); !has {
		t.Fatal("record 1 has no job")
	}

	// Watching ends after Age: the age-based pass covers the record from then on.
	r.Nudge(1)
	now = now.Add(time.Hour)
	if n, err := r.ReconcileNudged(ctx); err != nil || n != 0 || len(r.Nudged()) != 0 {
		t.Fatalf("ReconcileNudged after Age = %d, %v, nudged %v; want 0 and none", n, err, r.Nudged())
	}
}
