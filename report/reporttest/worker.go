package reporttest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/report"
)

// FailingSetFailed wraps a RecordStore so that SetFailed always fails with EUNAVAILABLE.
type FailingSetFailed struct{ report.RecordStore }

// SetFailed implements report.RecordStore by failing.
func (FailingSetFailed) SetFailed(context.Context, int64, string) (*report.Record, error) {
	return nil, errInjected
}

// WorkerConfig returns queuetest.FastConfig for a report queue: CheckJob dead-letters messages
// without a valid RecordId (with the reason, the record untouched) and MarkFailed(records)
// sets status 5 when a job is dead-lettered.
func WorkerConfig(q string, records report.RecordStore) queue.WorkerSettings {
	cfg := queuetest.FastConfig(q)
	cfg.Check = report.CheckJob
	cfg.OnDead = report.MarkFailed(records)
	return cfg
}

// RunWorkerSuite runs the report queue's worker tests (the built-in generator, status 5 on
// dead-lettering, the legacy application's message) on the backends newBroker and newRecords
// create.
func RunWorkerSuite(t *testing.T, newBroker queuetest.NewBroker, newRecords NewRecordStore) {
	ctx := context.Background()
	newWorker := func(t *testing.T, b queue.Broker, h queue.Handler, cfg queue.WorkerSettings) {
		t.Helper()
		w, err := queue.NewWorker(b, h, cfg)
		if err != nil {
			t.Fatalf("NewWorker: %v", err)
		}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(wctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	status := func(t *testing.T, rs report.RecordStore, id int64, want int) {
		t.Helper()
		eventually(t, "status "+strconv.Itoa(want), func() bool {
			r, err := rs.Get(ctx, id)
			return err == nil && r.Status == want
		})
	}
	submit := func(t *testing.T, rs report.RecordStore) int64 {
		t.Helper()
		id := queuetest.NewIDs(1)[0]
		if _, err := rs.Submit(ctx, id, []byte(`{"q1":4,"q2":5}`)); err != nil {
			t.Fatal(err)
		}
		return id
	}
	queuetest.RunGroups(t, map[string][]queuetest.NamedTest{"ReportWorker": {
		{Name: "GeneratorSetsStatus4", Run: func(t *testing.T) {
			b, rs, q := newBroker(t), newRecords(t), queuetest.NewQueueName()
			id := submit(t, rs)
			newWorker(t, b, (&report.Generator{Records: rs, Delay: -1, Logger: quiet}).Handler(), WorkerConfig(q, rs))
			if err := b.Enqueue(ctx, q, report.NewJob(id, time.Now(), nil)); err != nil {
				t.Fatal(err)
			}
			status(t, rs, id, report.StatusDone)
			eventually(t, "ack", func() bool { st, err := b.Stats(ctx, q); return err == nil && st == queue.Stats{} })
		}},
		{Name: "LegacyMessageGenerated", Run: func(t *testing.T) {
			// A message a legacy producer LPUSHed (no JobId) is generated like a current one.
			b, rs, q := newBroker(t), newRecords(t), queuetest.NewQueueName()
			id := submit(t, rs)
			newWorker(t, b, (&report.Generator{Records: rs, Delay: -1, Logger: quiet}).Handler(), WorkerConfig(q, rs))
			raw := `{"RecordId":` + strconv.FormatInt(id, 10) + `,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`
			if err := b.EnqueueRaw(ctx, q, raw); err != nil {
				t.Fatal(err)
			}
			status(t, rs, id, report.StatusDone)
		}},
		{Name: "DeadLetterSetsStatus5", Run: func(t *testing.T) {
			b, rs, q := newBroker(t), newRecords(t), queuetest.NewQueueName()
			id := submit(t, rs)
			newWorker(t, b, func(context.Context, *queue.Delivery) error {
				return errors.New("generation failed")
			}, WorkerConfig(q, rs))
			if err := b.Enqueue(ctx, q, report.NewJob(id, time.Now(), nil)); err != nil {
				t.Fatal(err)
			}
			status(t, rs, id, report.StatusFailed)
			if r, _ := rs.Get(ctx, id); r.Error != "generation failed" {
				t.Fatalf("record error = %q", r.Error)
			}
			dl, err := b.DeadLetters(ctx, q, 0, 1)
			if err != nil || len(dl) != 1 || recordIDOf(*dl[0].Message) != id || dl[0].Message.RetryCount != queue.DefaultMaxRetries {
				t.Fatalf("dead letter = %+v, %v", dl, err)
			}
		}},
		{Name: "DeadLettersEvenIfStatusUpdateFails", Run: func(t *testing.T) {
			b, rs, q := newBroker(t), newRecords(t), queuetest.NewQueueName()
			id := submit(t, rs)
			cfg := WorkerConfig(q, FailingSetFailed{rs})
			cfg.NoRetries = true
			newWorker(t, b, func(context.Context, *queue.Delivery) error { return errors.New("fail") }, cfg)
			if err := b.Enqueue(ctx, q, report.NewJob(id, time.Now(), nil)); err != nil {
				t.Fatal(err)
			}
			eventually(t, "dead letter", func() bool { st, err := b.Stats(ctx, q); return err == nil && st == queue.Stats{Dead: 1} })
			if r, _ := rs.Get(ctx, id); r.Status != report.StatusGenerating {
				t.Fatalf("status = %d, want 3 (the update failed)", r.Status)
			}
		}},
		{Name: "MessagesWithoutRecordIdDeadLettered", Run: func(t *testing.T) {
			b, rs, q := newBroker(t), newRecords(t), queuetest.NewQueueName()
			id := submit(t, rs)
			ran := make(chan struct{}, 4)
			newWorker(t, b, func(context.Context, *queue.Delivery) error { ran <- struct{}{}; return nil }, WorkerConfig(q, rs))
			reasons := map[string]string{
				`{"RecordId":0,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`:         "RecordId must be > 0, got 0",
				`{"RecordId":"x","RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`:       `report job RecordId "x" is not an integer`,
				`{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`:                      "report job without RecordId",
				`{"RecordId":` + strconv.FormatInt(id, 10) + `,"EnqueueTime":"not a time"}`: "malformed queue message",
			}
			for raw := range reasons {
				if err := b.EnqueueRaw(ctx, q, raw); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "dead-lettered", func() bool {
				st, err := b.Stats(ctx, q)
				return err == nil && st == queue.Stats{Dead: int64(len(reasons))}
			})
			if len(ran) != 0 {
				t.Fatal("a message without a valid RecordId reached the handler")
			}
			dls, err := b.DeadLetters(ctx, q, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			for raw, reason := range reasons {
				n := 0
				for _, dl := range dls {
					if dl.Message != nil && strings.Contains(dl.Message.LastError, reason) && !dl.Message.FailedAt.IsZero() {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s: %d dead letters with the reason %q, want 1 (dead letters %+v)", raw, n, reason, dls)
				}
			}
			if r, err := rs.Get(ctx, id); err != nil || r.Status != report.StatusGenerating {
				t.Fatalf("record %d = %+v, %v; a malformed message must not touch it (status 3)", id, r, err)
			}
		}},
	}})
}
