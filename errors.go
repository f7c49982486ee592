// Package redstate holds what every redstate block shares: the error vocabulary.
//
// Every block reports failures as *Error values carrying one of the codes below, wrapped with
// context using %w. The HTTP layer maps codes to status codes in one table, so a code is a
// stable, documented part of the API (clients may switch on it).
package redstate

import (
	"errors"
	"fmt"
)

// Error codes. They appear verbatim as the "code" field of JSON error bodies.
const (
	// EINVALID: the request is malformed (bad id, bad body, value out of range). HTTP 400.
	EINVALID = "invalid"
	// ENOTFOUND: the addressed entity does not exist or has expired. HTTP 404.
	ENOTFOUND = "not_found"
	// ECONFLICT: the write conflicts with the current state. HTTP 409.
	ECONFLICT = "conflict"
	// EPRECONDITION: an If-Match / expected version did not match. HTTP 412.
	EPRECONDITION = "precondition_failed"
	// ETOOLARGE: the request body or a batch exceeds a configured limit. HTTP 413.
	ETOOLARGE = "too_large"
	// EUNAUTHORIZED: no or unknown credentials. HTTP 401.
	EUNAUTHORIZED = "unauthorized"
	// EFORBIDDEN: the credentials lack the role the operation needs. HTTP 403.
	EFORBIDDEN = "forbidden"
	// EUNAVAILABLE: the backing store cannot serve the request now (Redis down, breaker open).
	// Retrying later may succeed. HTTP 503.
	EUNAVAILABLE = "unavailable"
	// EINTERNAL: a bug or unexpected state. HTTP 500.
	EINTERNAL = "internal"
)

// Error is the one error type of redstate. Code is machine readable; Message is for humans.
type Error struct {
	Code    string
	Message string
	// Err is the underlying cause, if any (not shown to HTTP clients for EINTERNAL).
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the given code and message whose cause is err.
func Wrap(code string, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for any other
// non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the human message of the first *Error in err's chain, or a generic
// text for other errors (their details are not meant for clients).
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// IsCode reports whether err carries the given code.
func IsCode(err error, code string) bool { return err != nil && ErrorCode(err) == code }
