package report

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// DefaultDelay is the built-in generator's artificial work time when Generator.Delay is 0.
// A real report generation takes about 30 s; serve's report.delay defaults to 2 s.
const DefaultDelay = 2 * time.Second

// Generator is the built-in report generator (the legacy application's ReportGenerationService): a
// queue.Handler that reads the record's answers, computes a deterministic report, waits Delay
// (standing in for a real generator's ~30 s of work, honouring ctx) and stores the report with
// RecordStore.SetResult (status 4, 已完成). It is idempotent: a job for a record already in
// status 4 is acknowledged without running again (a redelivery after a crash).
type Generator struct {
	// Records is where the answers are read and the result written (required).
	Records RecordStore
	// Delay is the artificial work time; 0 means DefaultDelay, negative means none.
	Delay time.Duration
	// Now stamps the report's generatedAt. Default time.Now.
	Now func() time.Time
	// OnRun, if set, is called once per execution (after the record was read, before the
	// work), with the record id and the job's RetryCount: tests count executions per record.
	OnRun func(id int64, attempt int)
	// Logger receives skipped jobs, and at Debug level a "generating report" line (recordId,
	// attempt, jobId) at the start of every execution. Default slog.Default().
	Logger *slog.Logger
}

// Handler returns g.Handle as a queue.Handler.
func (g *Generator) Handler() queue.Handler { return g.Handle }

// Handle generates the report of job's record. Errors the Worker retries: ctx ended during
// the work, the store failed. Permanent errors (queue.Permanent: dead-lettered at once with the
// reason, no retries): the record does not exist (a legacy LPUSH for a record redstate has
// never seen), it has no submitted answers, or its answers fail ValidateAnswers.
func (g *Generator) Handle(ctx context.Context, job *queue.Delivery) error {
	if g.Records == nil {
		return redstate.Errorf(redstate.EINVALID, "report generator: no record store")
	}
	m := job.Message
	id, err := RecordIDOf(m)
	if err != nil {
		return queue.Permanent(fmt.Errorf("report generator: %w", err))
	}
	rec, err := g.Records.Get(ctx, id)
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		return queue.Permanent(fmt.Errorf("report generator: record %d does not exist (submit its answers first)", id))
	}
	if err != nil {
		return fmt.Errorf("report generator: read record %d: %w", id, err)
	}
	switch rec.Status {
	case StatusDone:
		g.logger().Info("report already generated; job acknowledged without running", "recordId", id, "jobId", m.JobID)
		return nil
	case StatusPending, StatusInProgress:
		return queue.Permanent(fmt.Errorf("report generator: record %d has no submitted answers (status %d %s)", id, rec.Status, StatusText(rec.Status)))
	}
	g.logger().Debug("generating report", "recordId", id, "attempt", m.RetryCount, "jobId", m.JobID)
	if g.OnRun != nil {
		g.OnRun(id, m.RetryCount)
	}
	rep, err := Compute(rec.Answers)
	if err != nil {
		return queue.Permanent(fmt.Errorf("report generator: record %d: %w", id, err))
	}
	if d := g.delay(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("report generator: record %d: interrupted: %w", id, ctx.Err())
		case <-t.C:
		}
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	rep.RecordID = id
	rep.JobID = m.JobID
	rep.Attempt = m.RetryCount
	rep.GeneratedAt = now().UTC()
	body, err := json.Marshal(rep)
	if err != nil {
		return queue.Permanent(fmt.Errorf("report generator: record %d: the report cannot be encoded: %w", id, err))
	}
	if _, err := g.Records.SetResult(ctx, id, body); err != nil {
		return fmt.Errorf("report generator: store report of record %d: %w", id, err)
	}
	return nil
}

func (g *Generator) delay() time.Duration {
	if g.Delay == 0 {
		return DefaultDelay
	}
	return g.Delay
}

func (g *Generator) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

// Report is the generated report stored as the record's result.
type Report struct {
	// RecordID is the record the report belongs to.
	RecordID int64 `json:"recordId"`
	// AnswerCount is the number of leaf answers (non-container values) in the answers.
	AnswerCount int `json:"answerCount"`
	// Score is the sum of every numeric answer (booleans count as 1/0).
	Score float64 `json:"score"`
	// Average is Score divided by the number of numeric answers (0 without any).
	Average float64 `json:"average"`
	// Dimensions are per-dimension statistics when the answers are a JSON object: each
	// top-level key is a dimension over the numeric answers beneath it.
	Dimensions map[string]Dimension `json:"dimensions,omitempty"`
	// Level grades Average on the usual 1–5 answer scale: "low" (< 2.5), "medium" (< 3.5),
	// "high"; "" without numeric answers.
	Level string `json:"level,omitempty"`
	// JobID is the job that generated the report (empty for a legacy message).
	JobID string `json:"jobId"`
	// Attempt is the job's RetryCount when it generated the report (0: first attempt).
	Attempt int `json:"attempt"`
	// GeneratedAt is when the report was stored.
	GeneratedAt time.Time `json:"generatedAt"`
}

// Dimension summarizes the numeric answers of one dimension.
type Dimension struct {
	// Count is the number of numeric answers.
	Count int `json:"count"`
	// Sum is their sum.
	Sum float64 `json:"sum"`
	// Average is Sum / Count (0 when Count is 0).
	Average float64 `json:"average"`
}

// ValidateAnswers checks that the generator can process answers: they are JSON and the
// report they give can be encoded (numbers such as 1e308 whose sums overflow to infinity
// cannot). Submit runs it so such answers are a 400 at once instead of a job that fails four
// times over ~100 s. Errors: EINVALID naming the problem.
func ValidateAnswers(answers json.RawMessage) error {
	rep, err := Compute(answers)
	if err != nil {
		return err
	}
	if _, err := json.Marshal(rep); err != nil {
		return redstate.Wrap(redstate.EINVALID, err,
			"answers cannot be scored: a number or a sum of numbers is out of range (the report would hold infinity)")
	}
	return nil
}

// Compute returns the deterministic part of the report of answers (everything but RecordID,
// JobID, Attempt and GeneratedAt). Errors: EINVALID (answers not JSON).
func Compute(answers json.RawMessage) (Report, error) {
	var rep Report
	if len(answers) == 0 {
		return rep, nil
	}
	var v any
	if err := json.Unmarshal(answers, &v); err != nil {
		return rep, redstate.Wrap(redstate.EINVALID, err, "answers are not valid JSON")
	}
	var all stats
	all.add(v)
	rep.AnswerCount, rep.Score, rep.Average = all.leaves, round(all.sum), all.average()
	if obj, ok := v.(map[string]any); ok && len(obj) > 0 {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		rep.Dimensions = make(map[string]Dimension, len(keys))
		for _, k := range keys {
			var s stats
			s.add(obj[k])
			if s.count > 0 {
				rep.Dimensions[k] = Dimension{Count: s.count, Sum: round(s.sum), Average: s.average()}
			}
		}
		if len(rep.Dimensions) == 0 {
			rep.Dimensions = nil
		}
	}
	if all.count > 0 {
		switch {
		case rep.Average < 2.5:
			rep.Level = "low"
		case rep.Average < 3.5:
			rep.Level = "medium"
		default:
			rep.Level = "high"
		}
	}
	return rep, nil
}

// stats accumulates the leaves of a decoded JSON value.
type stats struct {
	leaves int     // non-container values
	count  int     // numeric (and boolean) values
	sum    float64 // their sum
}

func (s *stats) add(v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // a fixed order keeps float sums deterministic
		for _, k := range keys {
			s.add(x[k])
		}
	case []any:
		for _, e := range x {
			s.add(e)
		}
	case float64:
		s.leaves++
		s.count++
		s.sum += x
	case bool:
		s.leaves++
		s.count++
		if x {
			s.sum++
		}
	case nil:
		// an unanswered question: not an answer
	default:
		s.leaves++
	}
}

func (s *stats) average() float64 {
	if s.count == 0 {
		return 0
	}
	return round(s.sum / float64(s.count))
}

// round keeps 4 decimals, so that reports read well and compare exactly.
func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }
