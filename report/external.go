package report

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/redstate/redstate"
)

// MaxFailureReason bounds the reason Fail stores, in bytes.
const MaxFailureReason = 2000

// Complete is how a report generator outside redstate (a webhook handler, or an external consumer
// of the report queue such as the legacy application's own C# service) reports a finished report:
// it stores result (any JSON value but null) and sets status 4 (已完成), like the built-in Generator.
// The record must be in status 3 (生成中): a report is reported once per generation. The status is
// read, then the result written: a concurrent admin regenerate between the two still leaves the
// record with this result (as a late built-in job would). Errors: EINVALID (id <= 0, result missing
// or not JSON), 3241 (unknown id, ENOTFOUND), 2005 (status not 3, ECONFLICT), EUNAVAILABLE.
func (s *Service) Complete(ctx context.Context, id int64, result json.RawMessage) (*Record, error) {
	if len(result) == 0 || string(result) == "null" {
		return nil, redstate.Errorf(redstate.EINVALID, "result is required")
	}
	if !json.Valid(result) {
		return nil, redstate.Errorf(redstate.EINVALID, "result is not valid JSON")
	}
	if err := s.requireGenerating(ctx, id, "a result"); err != nil {
		return nil, err
	}
	return s.records.SetResult(ctx, id, result)
}

// Fail is how a report generator outside redstate reports that a report cannot be generated:
// it sets status 5 (生成失败) with reason (shown to admins; clients see the legacy application's
// FailedResultText), after which an admin may regenerate it. The record must be in status 3.
// Errors: EINVALID (id <= 0, reason empty, longer than MaxFailureReason bytes or not UTF-8),
// 3241, 2005, EUNAVAILABLE.
func (s *Service) Fail(ctx context.Context, id int64, reason string) (*Record, error) {
	if reason == "" || len(reason) > MaxFailureReason || !utf8.ValidString(reason) {
		return nil, redstate.Errorf(redstate.EINVALID, "reason must be 1..%d bytes of UTF-8 text", MaxFailureReason)
	}
	if err := s.requireGenerating(ctx, id, "a failure"); err != nil {
		return nil, err
	}
	return s.records.SetFailed(ctx, id, reason)
}

// requireGenerating checks that record id exists and is in status 3.
func (s *Service) requireGenerating(ctx context.Context, id int64, what string) error {
	rec, err := s.admin.Record(ctx, id)
	if err != nil {
		return err
	}
	if rec.Status != StatusGenerating {
		return &BusinessError{Code: CodeInvalidOperation, Message: MsgNotGenerating,
			Err: fmt.Errorf("record %d is in status %d (%s); %s can be reported in status 3 (生成中) only", id, rec.Status, StatusText(rec.Status), what)}
	}
	return nil
}

// MsgNotGenerating is the message of business error 2005 for a result or failure reported for
// a record that is not in status 3 (the legacy application's wording for a forbidden operation).
const MsgNotGenerating = "当前状态不允许提交报告结果"
