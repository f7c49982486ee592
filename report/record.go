package report

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redstate/redstate"
)

// Record statuses of the legacy application's assessment records (Assessment_Record.Status).
const (
	// StatusPending: 待测评, the assessment has not started.
	StatusPending = 1
	// StatusInProgress: 测评中, the user is answering.
	StatusInProgress = 2
	// StatusGenerating: 生成中, answers submitted, the report job is queued or running.
	StatusGenerating = 3
	// StatusDone: 已完成, the report was generated (set by the handler).
	StatusDone = 4
	// StatusFailed: 生成失败, the job exhausted its retries and was dead-lettered.
	StatusFailed = 5
)

// FailedResultText is the legacy application's result description for a record in StatusFailed.
const FailedResultText = "报告生成失败,请联系客服"

// DefaultRecordRetention is how long a record is kept after its last write, by default.
const DefaultRecordRetention = 30 * 24 * time.Hour

// StatusText returns the legacy application's name of status (e.g. "生成失败" for 5), or "" for an
// unknown status.
func StatusText(status int) string {
	switch status {
	case StatusPending:
		return "待测评"
	case StatusInProgress:
		return "测评中"
	case StatusGenerating:
		return "生成中"
	case StatusDone:
		return "已完成"
	case StatusFailed:
		return "生成失败"
	}
	return ""
}

// ValidStatus reports whether status is one of the five record statuses.
func ValidStatus(status int) bool { return status >= StatusPending && status <= StatusFailed }

// Regenerable reports whether a record in status may be regenerated: 生成中 (3) or 生成失败 (5).
func Regenerable(status int) bool { return status == StatusGenerating || status == StatusFailed }

// Record is the legacy application's assessment record as far as its report is concerned.
type Record struct {
	// ID is the business record id (the legacy application's RecordId), > 0.
	ID int64 `json:"id"`
	// Status is one of the Status constants.
	Status int `json:"status"`
	// StatusText is StatusText(Status), filled by the store on every read.
	StatusText string `json:"statusText"`
	// Answers is the submitted input of the job (opaque JSON), if any.
	Answers json.RawMessage `json:"answers,omitempty"`
	// Result is the generated report (opaque JSON); present only in StatusDone.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the last failure reason; set in StatusFailed, cleared by a reset or a result.
	Error string `json:"error,omitempty"`
	// UpdatedAt is the time of the last write, by the store's clock.
	UpdatedAt time.Time `json:"updatedAt"`
}

// RecordStore keeps the records. memrecords, redisrecords and sqlrecords implement it with
// identical semantics, checked by reporttest.RunRecordStoreSuite. Implementations must be safe for
// concurrent use. A record expires a backend-configured retention (default
// DefaultRecordRetention) after its last write; an expired record is ENOTFOUND.
//
// Every error is a *redstate.Error, possibly wrapped. Ids must be > 0 (EINVALID otherwise).
// Business errors (1001, 2005, 3241) are not produced here: the Admin maps store codes to them.
type RecordStore interface {
	// Create stores a new record with the given status and answers.
	// Errors: EINVALID (id <= 0, unknown status, answers not valid JSON), ECONFLICT (the id
	// exists), EUNAVAILABLE.
	Create(ctx context.Context, id int64, status int, answers json.RawMessage) (*Record, error)

	// Submit records submitted answers: it creates the record, or updates one in status 1
	// (待测评) or 2 (测评中), setting status 3 (生成中), storing answers and clearing Result and
	// Error, in one atomic step. The caller then enqueues the job. A record in status 3, 4 or 5
	// is not changed: answers are submitted once, and only an admin regenerates a report.
	// Errors: EINVALID, ECONFLICT (status 3, 4 or 5; see SubmitConflict), EUNAVAILABLE.
	Submit(ctx context.Context, id int64, answers json.RawMessage) (*Record, error)

	// Get returns the record. Errors: EINVALID, ENOTFOUND (missing or expired), EUNAVAILABLE.
	Get(ctx context.Context, id int64) (*Record, error)

	// SetResult stores the generated report and sets status 4 (已完成), clearing Error.
	// Errors: EINVALID (result not valid JSON), ENOTFOUND, EUNAVAILABLE.
	SetResult(ctx context.Context, id int64, result json.RawMessage) (*Record, error)

	// SetFailed sets status 5 (生成失败) and Error = reason, clearing Result.
	// Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
	SetFailed(ctx context.Context, id int64, reason string) (*Record, error)

	// ResetForRegeneration atomically checks that the record's status is 3 or 5 and, if so,
	// sets status 3, clears Result and Error and returns the updated record. Otherwise nothing
	// changes. Errors: EINVALID, ENOTFOUND, ECONFLICT (status not 3 or 5), EUNAVAILABLE.
	ResetForRegeneration(ctx context.Context, id int64) (*Record, error)

	// ListGeneratingOlderThan returns the ids, ascending, of records in status 3 whose last
	// write is at least age ago (by the store's clock): the reconciler's candidates.
	// Errors: EINVALID (age < 0), EUNAVAILABLE.
	ListGeneratingOlderThan(ctx context.Context, age time.Duration) ([]int64, error)
}

// Submittable reports whether answers may be submitted for a record in status: 1 (待测评) or
// 2 (测评中). A missing record may always be submitted.
func Submittable(status int) bool { return status == StatusPending || status == StatusInProgress }

// SubmitConflict is RecordStore.Submit's error for a record whose status forbids a submit: a
// BusinessError 2005 (an ECONFLICT, HTTP 409) naming the status.
func SubmitConflict(id int64, status int) error {
	return &BusinessError{Code: CodeInvalidOperation, Message: MsgStatusNotSubmittable,
		Err: fmt.Errorf("record %d is in status %d (%s); answers can be submitted in status 1 or 2 only", id, status, StatusText(status))}
}

// CheckRecordID returns EINVALID unless id > 0: the id rule every RecordStore applies.
func CheckRecordID(id int64) error {
	if id <= 0 {
		return redstate.Errorf(redstate.EINVALID, "record id must be > 0, got %d", id)
	}
	return nil
}

// CheckCreate checks the arguments of RecordStore.Create: a valid id, a known status and
// answers that are empty or valid JSON. Errors: EINVALID.
func CheckCreate(id int64, status int, answers json.RawMessage) error {
	if err := CheckRecordID(id); err != nil {
		return err
	}
	if !ValidStatus(status) {
		return redstate.Errorf(redstate.EINVALID, "unknown record status %d", status)
	}
	return CheckRecordJSON("answers", answers)
}

// CheckRecordJSON returns EINVALID unless b is empty or valid JSON (answers, results).
func CheckRecordJSON(what string, b json.RawMessage) error {
	if len(b) > 0 && !json.Valid(b) {
		return redstate.Errorf(redstate.EINVALID, "%s is not valid JSON", what)
	}
	return nil
}
