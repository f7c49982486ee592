package report_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
)

func TestComplete_AndFail_FromAnOutsideGenerator(t *testing.T) {
	svc, _, _ := newFlow(t)
	ctx := context.Background()
	if _, err := svc.Complete(ctx, 1, json.RawMessage(`{"x":1}`)); report.BusinessCode(err) != report.CodeRecordNotFound {
		t.Fatalf("unknown record: %v", err)
	}
	if _, err := svc.Submit(ctx, 1, json.RawMessage(`{"q":1}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "null", "{"} {
		if _, err := svc.Complete(ctx, 1, json.RawMessage(bad)); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("Complete(%q) = %v, want EINVALID", bad, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", report.MaxFailureReason+1), "\xff"} {
		if _, err := svc.Fail(ctx, 1, bad); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("Fail(%.10q) = %v, want EINVALID", bad, err)
		}
	}
	rec, err := svc.Fail(ctx, 1, "scoring service timed out")
	if err != nil || rec.Status != report.StatusFailed || rec.Error != "scoring service timed out" {
		t.Fatalf("Fail = %+v, %v", rec, err)
	}
	if _, err := svc.Complete(ctx, 1, json.RawMessage(`{"x":1}`)); report.BusinessCode(err) != report.CodeInvalidOperation {
		t.Fatalf("Complete in status 5 = %v, want 2005", err)
	}
	if err := svc.Regenerate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	rec, err = svc.Complete(ctx, 1, json.RawMessage(`{"x":1}`))
	if err != nil || rec.Status != report.StatusDone || string(rec.Result) != `{"x":1}` {
		t.Fatalf("Complete = %+v, %v", rec, err)
	}
	if _, err := svc.Fail(ctx, 1, "late"); report.BusinessCode(err) != report.CodeInvalidOperation {
		t.Fatalf("Fail in status 4 = %v, want 2005", err)
	}
}

// nudges records Nudge calls.
type nudges struct{ ids []int64 }

func (n *nudges) Nudge(id int64) { n.ids = append(n.ids, id) }

func TestSubmit_EnqueueFailureNudgesTheReconciler(t *testing.T) {
	n := &nudges{}
	rs := memrecords.New(memrecords.Options{})
	svc, err := report.NewService(failingBroker{memqueue.NewBroker(memqueue.Options{})}, rs, report.Options{Nudger: n})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Submit(context.Background(), 4, json.RawMessage(`{"q":1}`)); err != nil {
		t.Fatal(err)
	}
	if len(n.ids) != 1 || n.ids[0] != 4 {
		t.Fatalf("nudged %v, want [4]", n.ids)
	}
}

// flakyRecords fails the first Submit (the first failures Submits, when set) with
// EUNAVAILABLE, after applying the first when applied is set (the reply was lost) or before
// applying it otherwise (the request was lost).
type flakyRecords struct {
	report.RecordStore
	applied  bool
	failures int
	failed   int
}

func (f *flakyRecords) Submit(ctx context.Context, id int64, answers json.RawMessage) (*report.Record, error) {
	if f.failed < max(f.failures, 1) {
		f.failed++
		if f.applied && f.failed == 1 {
			if _, err := f.RecordStore.Submit(ctx, id, answers); err != nil {
				return nil, err
			}
		}
		return nil, redstate.Errorf(redstate.EUNAVAILABLE, "connection reset by peer")
	}
	return f.RecordStore.Submit(ctx, id, answers)
}

// TestSubmit_RetriesUntilTheStoreAnswers: right after a Redis restart the client's pool may
// refuse to dial for up to a second (go-redis stops dialing after as many failed dials as the
// pool has connections, then probes once a second), so the first retries fail at once too; the
// submit retries with a growing pause for up to submitRetryBudget instead of once (a single
// retry failed cli's TestServe_FirstSubmitAfterRedisRestart on a loaded machine).
func TestSubmit_RetriesUntilTheStoreAnswers(t *testing.T) {
	for _, applied := range []bool{false, true} {
		rs := &flakyRecords{RecordStore: memrecords.New(memrecords.Options{}), applied: applied, failures: 4}
		svc, err := report.NewService(memqueue.NewBroker(memqueue.Options{}), rs, report.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := svc.Submit(context.Background(), 7, json.RawMessage(`{"q":1}`))
		if err != nil || rec.Status != report.StatusGenerating {
			t.Fatalf("applied=%v: Submit = %+v, %v; want status 3 after four failed attempts", applied, rec, err)
		}
	}
	// A store that stays unavailable is answered unavailable once the budget is spent.
	rs := &flakyRecords{RecordStore: memrecords.New(memrecords.Options{}), failures: 1 << 30}
	svc, err := report.NewService(memqueue.NewBroker(memqueue.Options{}), rs, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Submit(context.Background(), 8, json.RawMessage(`{"q":1}`)); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Submit on a store that stays down = %v, want EUNAVAILABLE", err)
	}
}

// TestSubmit_RetriesOnceOnAnUnavailableStore: a submit whose store call failed on a dead
// connection is retried once and succeeds, whether or not the first attempt was applied.
func TestSubmit_RetriesOnceOnAnUnavailableStore(t *testing.T) {
	for _, applied := range []bool{false, true} {
		rs := &flakyRecords{RecordStore: memrecords.New(memrecords.Options{}), applied: applied}
		svc, err := report.NewService(memqueue.NewBroker(memqueue.Options{}), rs, report.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := svc.Submit(context.Background(), 6, json.RawMessage(`{"q":1}`))
		if err != nil || rec.Status != report.StatusGenerating {
			t.Fatalf("applied=%v: Submit = %+v, %v; want status 3", applied, rec, err)
		}
		// A different submission over the record is still refused.
		if _, err := svc.Submit(context.Background(), 6, json.RawMessage(`{"q":2}`)); report.BusinessCode(err) != report.CodeInvalidOperation {
			t.Fatalf("applied=%v: second submit = %v, want 2005", applied, err)
		}
	}
}
