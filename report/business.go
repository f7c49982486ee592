package report

import (
	"errors"
	"fmt"

	"github.com/redstate/redstate"
)

// Business error codes of the legacy application's admin API (its 后台管理端 table).
const (
	// CodeParamError (1001, ParamError): the request is malformed, e.g. an empty id list.
	CodeParamError = 1001
	// CodeInvalidOperation (2005, InvalidOperation): the record's status forbids the operation.
	CodeInvalidOperation = 2005
	// CodeRecordNotFound (3241, AssessmentRecordNotFound): the record does not exist.
	CodeRecordNotFound = 3241
)

// Business error messages of the legacy application, verbatim (its clients compare them).
const (
	// MsgEmptyIDs is the message of CodeParamError for an empty batch.
	MsgEmptyIDs = "记录ID列表不能为空"
	// MsgStatusNotRegenerable is the message of CodeInvalidOperation for Regenerate.
	MsgStatusNotRegenerable = "当前状态不允许重新生成"
	// MsgStatusNotSubmittable is the message of CodeInvalidOperation for a submit on a record past
	// status 2 (the legacy application's wording for a forbidden operation, applied to submit).
	MsgStatusNotSubmittable = "当前状态不允许提交答案"
	// MsgRecordNotFound is the message of CodeRecordNotFound.
	MsgRecordNotFound = "测评记录不存在"
)

// BusinessError is a business error of the legacy application: a numeric Code its API's clients
// switch on and its Chinese Message. It unwraps to a *redstate.Error whose code the HTTP layer maps
// to a status: 1001 → EINVALID (400), 2005 → ECONFLICT (409), 3241 → ENOTFOUND (404), so
// redstate.ErrorCode works on it.
type BusinessError struct {
	// Code is one of the Code constants.
	Code int
	// Message is the legacy application's text for Code.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error implements error.
func (e *BusinessError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// RedstateCode returns the redstate error code Code maps to (EINTERNAL for unknown codes).
func (e *BusinessError) RedstateCode() string {
	switch e.Code {
	case CodeParamError:
		return redstate.EINVALID
	case CodeInvalidOperation:
		return redstate.ECONFLICT
	case CodeRecordNotFound:
		return redstate.ENOTFOUND
	}
	return redstate.EINTERNAL
}

// Unwrap returns the *redstate.Error equivalent (carrying Err as its cause).
func (e *BusinessError) Unwrap() error {
	return &redstate.Error{Code: e.RedstateCode(), Message: e.Message, Err: e.Err}
}

// BusinessCode returns the Code of the first *BusinessError in err's chain, or 0.
func BusinessCode(err error) int {
	var be *BusinessError
	if errors.As(err, &be) {
		return be.Code
	}
	return 0
}

// errEmptyIDs, errNotRegenerable and errNotFound build the three business errors.
func errEmptyIDs() error { return &BusinessError{Code: CodeParamError, Message: MsgEmptyIDs} }

func errNotRegenerable(cause error) error {
	return &BusinessError{Code: CodeInvalidOperation, Message: MsgStatusNotRegenerable, Err: cause}
}

func errNotFound(cause error) error {
	return &BusinessError{Code: CodeRecordNotFound, Message: MsgRecordNotFound, Err: cause}
}
