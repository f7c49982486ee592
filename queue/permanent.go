package queue

import "errors"

// permanentError marks a handler failure that no retry can fix.
type permanentError struct{ err error }

// Error implements error.
func (e *permanentError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: a Handler returns Permanent(err) for a job that can never
// succeed (invalid input, an entity that does not exist), and the Worker dead-letters it at once
// with err as its reason instead of retrying it after 10, 30 and 60 seconds. Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent tells whether err (or an error it wraps) was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
