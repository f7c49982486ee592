// Package rediserr maps go-redis errors onto redstate's error vocabulary, the same way for
// every Redis backend.
package rediserr

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// notNow are the error-reply prefixes that mean "the server cannot serve this now" rather than
// "never": loading, cluster reconfiguring or down, read-only replica, busy script, out of
// memory, redirects left over after go-redis's own retries, a script cache flushed under us,
// and a blocking command interrupted by CLIENT UNBLOCK ... ERROR.
var notNow = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY",
	"NOREPLICAS", "OOM", "MOVED", "ASK", "NOSCRIPT", "UNBLOCKED"}

// refused are the error-reply prefixes of a server that refuses this client: an ACL that does
// not allow the command or key (NOPERM), or failed authentication. Nothing the caller sent is
// wrong and retrying at once will not help, but the service is unavailable, not broken: an
// operator fixes the ACL or credentials.
var refused = []string{"NOPERM", "NOAUTH", "WRONGPASS"}

// Map turns a go-redis error into a *redstate.Error, op naming what was attempted: nil stays
// nil; an error that already carries a redstate code is returned as is; redis.Nil is
// ENOTFOUND; the replies in notNow, the refusals (NOPERM, NOAUTH, WRONGPASS) and every
// transport failure (dial, timeout, closed connection, cancelled context, pool exhausted) are
// EUNAVAILABLE; any other error reply (a script error, WRONGTYPE) is EINTERNAL.
func Map(err error, op string) error {
	if err == nil {
		return nil
	}
	var re *redstate.Error
	if errors.As(err, &re) {
		return err
	}
	if errors.Is(err, redis.Nil) {
		return redstate.Wrap(redstate.ENOTFOUND, err, op+": not found")
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		if Retryable(reply.Error()) {
			return Unavailable(err, op)
		}
		if Refused(reply.Error()) {
			return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": Redis refused the command (check the ACL user's permissions and credentials)")
		}
		return redstate.Wrap(redstate.EINTERNAL, err, op+": unexpected Redis reply")
	}
	return Unavailable(err, op)
}

// Unavailable wraps err as EUNAVAILABLE.
func Unavailable(err error, op string) error {
	return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": Redis is unavailable")
}

// Reply maps an error reply met inside a script for one item of a batch (caught there by
// pcall and returned as text) like Map maps an error reply: "not now" replies (OOM, READONLY,
// BUSY, ...) are EUNAVAILABLE, so breakers and fallbacks see them; anything else (WRONGTYPE on
// a foreign key) is EINTERNAL.
func Reply(msg, op string) error {
	if Retryable(msg) {
		return Unavailable(errors.New(msg), op)
	}
	return redstate.Errorf(redstate.EINTERNAL, "%s: unexpected Redis reply: %s", op, msg)
}

// Retryable reports whether an error reply means "not now" rather than "never".
func Retryable(reply string) bool {
	for _, p := range notNow {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}

// Refused reports whether an error reply is a refusal of this client (ACL or authentication).
func Refused(reply string) bool {
	for _, p := range refused {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}
