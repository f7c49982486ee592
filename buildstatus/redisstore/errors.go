package redisstore

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// mapErr turns a go-redis error into a *redstate.Error: redis.Nil is ENOTFOUND; replies that
// say the server cannot serve now (LOADING, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, READONLY,
// BUSY, NOREPLICAS, OOM, MOVED/ASK left over after redirects) and every transport failure
// (dial, timeout, closed connection, cancelled context, pool exhausted) are EUNAVAILABLE;
// any other error reply (a script error, WRONGTYPE) is EINTERNAL.
func mapErr(err error, op string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.Nil) {
		return redstate.Wrap(redstate.ENOTFOUND, err, op+": not found")
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		if retryableReply(reply.Error()) {
			return unavailable(err, op)
		}
		return redstate.Wrap(redstate.EINTERNAL, err, op+": unexpected Redis reply")
	}
	return unavailable(err, op)
}

// unavailable wraps err as EUNAVAILABLE.
func unavailable(err error, op string) error {
	return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": Redis is unavailable")
}

// retryableReply reports whether an error reply means "not now" rather than "never".
func retryableReply(msg string) bool {
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY", "NOREPLICAS", "OOM", "MOVED", "ASK", "NOSCRIPT"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
