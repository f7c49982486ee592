package report

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// MaxBatchRegenerate is the largest id list BatchRegenerate accepts.
const MaxBatchRegenerate = 1000

// Admin holds the back-office operations on records (后台管理): reading a record and regenerating
// reports. (The report queue's dead letters and counts are the generic queue.Admin's.) Its errors
// are *BusinessError values for the legacy application's business codes (1001, 2005, 3241) and
// *redstate.Error values otherwise.
type Admin struct {
	b       queue.Broker
	records RecordStore
	queue   string
	log     *slog.Logger
	now     func() time.Time
	nudger  Nudger
}

// NewAdmin returns an Admin with opts (those of the Service it serves). Errors: EINVALID (nil broker or store, bad queue name).
func NewAdmin(b queue.Broker, records RecordStore, opts Options) (*Admin, error) {
	if b == nil || records == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "report admin: broker and record store are required")
	}
	if opts.Queue == "" {
		opts.Queue = DefaultQueue
	}
	if err := queue.ValidateQueueName(opts.Queue); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Admin{b: b, records: records, queue: opts.Queue, log: opts.Logger.With("queue", opts.Queue), now: opts.Now, nudger: opts.Nudger}, nil
}

// BatchRegenerateResult is the outcome of BatchRegenerate (the legacy application's
// BatchRegenerateResult). SuccessCount + SkippedCount always equals the number of ids requested.
type BatchRegenerateResult struct {
	// SuccessCount is how many records were reset and enqueued (成功入队数量).
	SuccessCount int `json:"SuccessCount"`
	// SkippedCount is how many ids were skipped: unknown, in a status other than 3 or 5, repeated
	// in the request, or whose reset or enqueue failed (跳过数量).
	SkippedCount int `json:"SkippedCount"`
}

// Record returns the record. Errors: 3241 (unknown or expired id), EUNAVAILABLE.
func (a *Admin) Record(ctx context.Context, id int64) (*Record, error) {
	if id <= 0 {
		return nil, errNotFound(nil)
	}
	r, err := a.records.Get(ctx, id)
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		return nil, errNotFound(err)
	}
	return r, err
}

// Regenerate is the legacy application's RegenerateReportAsync: if the record is in status 3 (生成中)
// or 5 (生成失败) it atomically resets it to 3 and clears its result, then enqueues a new job with
// RetryCount 0. Errors: 3241 (unknown id, "测评记录不存在"), 2005 (other status, "当前状态不允许 重新生成"; nothing
// changes), EUNAVAILABLE (store or broker unreachable). If only the enqueue fails, the record stays
// in status 3, the error (EUNAVAILABLE) says so, and the Reconciler enqueues it later: at once when
// it answers, if it is the Admin's Nudger.
func (a *Admin) Regenerate(ctx context.Context, id int64) error {
	if id <= 0 {
		return errNotFound(nil)
	}
	_, err := a.records.ResetForRegeneration(ctx, id)
	switch {
	case redstate.IsCode(err, redstate.ENOTFOUND):
		return errNotFound(err)
	case redstate.IsCode(err, redstate.ECONFLICT):
		return errNotRegenerable(err)
	case err != nil:
		return fmt.Errorf("regenerate record %d: %w", id, err)
	}
	if err := a.b.Enqueue(ctx, a.queue, NewJob(id, a.now(), nil)); err != nil {
		a.log.Error("report: enqueue for regeneration failed; the reconciler will retry", "recordId", id, "err", err)
		if a.nudger != nil {
			a.nudger.Nudge(id)
		}
		return redstate.Wrap(redstate.EUNAVAILABLE, err, fmt.Sprintf(
			"record %d was reset to status 3 (生成中) but its job could not be enqueued; the reconciler will enqueue it when the queue answers", id))
	}
	return nil
}

// BatchRegenerate is the legacy application's BatchRegenerateReportAsync: Regenerate for each id,
// counting successes and skips (see BatchRegenerateResult); a repeated id is regenerated once and
// its repetitions are skipped. Errors: 1001 ("记录ID列表不能为空") for an empty list or more than
// MaxBatchRegenerate ids; individual failures never fail the batch.
func (a *Admin) BatchRegenerate(ctx context.Context, ids []int64) (BatchRegenerateResult, error) {
	var res BatchRegenerateResult
	if len(ids) == 0 {
		return res, errEmptyIDs()
	}
	if len(ids) > MaxBatchRegenerate {
		return res, &BusinessError{Code: CodeParamError, Message: fmt.Sprintf("记录ID数量不能超过%d", MaxBatchRegenerate)}
	}
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			res.SkippedCount++
			continue
		}
		seen[id] = true
		if err := a.Regenerate(ctx, id); err != nil {
			res.SkippedCount++
			continue
		}
		res.SuccessCount++
	}
	return res, nil
}
