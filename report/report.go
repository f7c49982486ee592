// Package report is the assessment-report flow on top of the queue block: Service submits answers
// (status 3 生成中, then enqueue; an enqueue failure is logged and the submission still succeeds,
// leaving the record to the reconciler), reads a record's status and result with the legacy
// application's texts, and regenerates reports (the admin operations with its business errors 1001,
// 2005 and 3241); Generator is the built-in report generator, a queue.Handler that computes a
// report from the answers and sets status 4 (已完成).
//
// Records (Record, with the legacy application's statuses) are kept by a RecordStore:
// report/sqlrecords (its assessment_records in SQL, the default), report/redisrecords or
// report/memrecords; report/reporttest is the conformance suite they pass. Jobs ride a queue.Broker
// (Redis: queue/redisqueue). Admin reads records and regenerates reports, Reconciler enqueues
// records a failed enqueue left in status 3, MarkFailed sets status 5 on a dead letter, and
// Complete and Fail take results from generators outside redstate. The Example submits answers and
// polls the report on SQLite and Redis; docs/report.md describes the flow.
//
// The flow keeps the queue message format, key names, record statuses, texts and business codes of
// the legacy assessment application (a C# service), so that application's producers, consumers and
// clients work with redstate unchanged; "the legacy application" in this package's comments is that
// one, and docs/report.md maps each of its operations to redstate's.
package report

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/ctxsleep"
	"github.com/redstate/redstate/queue"
)

// Options configure a Service and its Admin. The zero value is ready to use.
type Options struct {
	// Queue is the queue report jobs go to. Default DefaultQueue ("report:queue").
	Queue string
	// Logger receives enqueue failures. Default slog.Default().
	Logger *slog.Logger
	// Nudger, if set, is told about every record a failed enqueue (or a regeneration whose
	// enqueue failed) left in status 3 (the report queue's Reconciler), so that it is
	// enqueued as soon as the queue answers.
	Nudger Nudger
	// Now is the clock for EnqueueTime. Default time.Now.
	Now func() time.Time
}

// Service is the legacy application's AssessmentService (submit, result status) and
// AssessmentRecordService (regenerate) as far as reports are concerned. It is safe for concurrent
// use.
type Service struct {
	b       queue.Broker
	records RecordStore
	admin   *Admin
	queues  *queue.Admin
	queue   string
	log     *slog.Logger
	nudger  Nudger
	now     func() time.Time
}

// NewService returns a Service enqueuing on b and keeping records in records.
// Errors: EINVALID (nil broker or store, bad queue name).
func NewService(b queue.Broker, records RecordStore, opts Options) (*Service, error) {
	if opts.Queue == "" {
		opts.Queue = DefaultQueue
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	admin, err := NewAdmin(b, records, opts)
	if err != nil {
		return nil, err
	}
	queues, err := queue.NewAdmin(b, opts.Queue)
	if err != nil {
		return nil, err
	}
	return &Service{
		b:       b,
		records: records,
		admin:   admin,
		queues:  queues,
		queue:   opts.Queue,
		log:     opts.Logger.With("queue", opts.Queue),
		nudger:  opts.Nudger,
		now:     opts.Now,
	}, nil
}

// Queue returns the name of the queue report jobs go to.
func (s *Service) Queue() string { return s.queue }

// Admin returns the queue admin of the report queue (dead letters, stats).
func (s *Service) Admin() *queue.Admin { return s.queues }

// Submit is the legacy application's SubmitAnswersAsync: it stores answers with status 3 (生成中) and
// enqueues a report job, returning at once. An enqueue failure is logged and does not fail the
// call: the record stays in status 3 and the reconciler enqueues it later (as soon as the queue
// answers when it is the Service's Nudger).
// Errors: EINVALID (id <= 0, answers missing or not JSON), EUNAVAILABLE (record store).
func (s *Service) Submit(ctx context.Context, id int64, answers json.RawMessage) (*Record, error) {
	if id <= 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "recordId must be > 0, got %d", id)
	}
	if len(answers) == 0 || string(answers) == "null" {
		return nil, redstate.Errorf(redstate.EINVALID, "answers are required")
	}
	if !json.Valid(answers) {
		return nil, redstate.Errorf(redstate.EINVALID, "answers are not valid JSON")
	}
	if err := ValidateAnswers(answers); err != nil {
		return nil, err
	}
	rec, err := s.submitRetrying(ctx, id, answers)
	if err != nil {
		return nil, err
	}
	if err := s.b.Enqueue(ctx, s.queue, NewJob(id, s.now(), nil)); err != nil {
		s.log.Error("report: enqueue after submit failed; record stays 生成中 for the reconciler", "recordId", id, "err", err)
		if s.nudger != nil {
			s.nudger.Nudge(id)
		}
	}
	return rec, nil
}

// submitRetryBudget bounds how long a submit retries a store that is unavailable: right after
// a Redis restart go-redis may refuse to dial for up to a second (after as many failed dials as
// its pool has connections it probes once a second), so one immediate retry is not enough.
const submitRetryBudget = 2 * time.Second

// submitRetrying stores the submission, retrying while the store is unavailable, with a pause
// doubling from 50 ms, for up to submitRetryBudget: a pooled connection can die with a server
// restart, and a retry runs on a fresh one. If an attempt was applied but its answer lost, a
// later one finds the record already in status 3 with these very answers and that is the
// success it reports; any other state is the retry's own answer.
func (s *Service) submitRetrying(ctx context.Context, id int64, answers json.RawMessage) (*Record, error) {
	rec, err := s.records.Submit(ctx, id, answers)
	deadline := time.Now().Add(submitRetryBudget)
	for pause := 50 * time.Millisecond; redstate.IsCode(err, redstate.EUNAVAILABLE) && ctx.Err() == nil; pause *= 2 {
		if time.Now().Add(pause).After(deadline) || !ctxsleep.Sleep(ctx, pause) {
			return rec, err
		}
		s.log.Warn("report: record store unavailable at submit; retrying", "recordId", id, "err", err)
		rec, err = s.records.Submit(ctx, id, answers)
		if BusinessCode(err) == CodeInvalidOperation {
			if cur, gerr := s.records.Get(ctx, id); gerr == nil && cur.Status == StatusGenerating && bytes.Equal(cur.Answers, answers) {
				return cur, nil
			}
		}
	}
	return rec, err
}

// Status is a record's report status: the legacy application's GetResultStatusAsync answer.
type Status struct {
	// ID is the record id.
	ID int64 `json:"id"`
	// Status is 1..5 (3 生成中, 4 已完成, 5 生成失败).
	Status int `json:"status"`
	// StatusText is the legacy application's name of Status.
	StatusText string `json:"statusText"`
	// ResultText describes the result: for status 5 the legacy application's "报告生成失败,请联系客服",
	// otherwise StatusText.
	ResultText string `json:"resultText"`
	// LastError is why the report failed (the last attempt's error, or the reason an external
	// generator reported); present only in status 5.
	LastError string `json:"lastError,omitempty"`
	// Result is the generated report; present only in status 4.
	Result json.RawMessage `json:"result,omitempty"`
	// UpdatedAt is the time of the record's last write.
	UpdatedAt time.Time `json:"updatedAt"`
}

// StatusOf returns the Status document of r.
func StatusOf(r *Record) Status {
	st := Status{
		ID:         r.ID,
		Status:     r.Status,
		StatusText: StatusText(r.Status),
		ResultText: StatusText(r.Status),
		UpdatedAt:  r.UpdatedAt,
	}
	if r.Status == StatusFailed {
		st.ResultText, st.LastError = FailedResultText, r.Error
	}
	if r.Status == StatusDone {
		st.Result = r.Result
	}
	return st
}

// Status returns the record's report status. Errors: 3241 (unknown or expired id, a
// *BusinessError that maps to ENOTFOUND), EUNAVAILABLE.
func (s *Service) Status(ctx context.Context, id int64) (*Status, error) {
	r, err := s.admin.Record(ctx, id)
	if err != nil {
		return nil, err
	}
	st := StatusOf(r)
	return &st, nil
}

// Regenerate is the legacy application's RegenerateReportAsync (see Admin.Regenerate).
// Errors: 3241, 2005, EUNAVAILABLE.
func (s *Service) Regenerate(ctx context.Context, id int64) error { return s.admin.Regenerate(ctx, id) }

// BatchRegenerate is the legacy application's BatchRegenerateReportAsync (see
// Admin.BatchRegenerate). Errors: 1001 (empty or oversized list).
func (s *Service) BatchRegenerate(ctx context.Context, ids []int64) (BatchRegenerateResult, error) {
	return s.admin.BatchRegenerate(ctx, ids)
}
