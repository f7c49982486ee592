package redisqueue

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// mapErr turns a go-redis error into a *redstate.Error, as buildstatus/redisstore does:
// redis.Nil is ENOTFOUND; replies that say the server cannot serve now (LOADING, CLUSTERDOWN,
// TRYAGAIN, MASTERDOWN, READONLY, BUSY, NOREPLICAS, OOM, MOVED/ASK left over after redirects)
// and every transport failure (dial, timeout, closed connection, cancelled context, pool
// exhausted) are EUNAVAILABLE; any other error reply (a script error, WRONGTYPE) is EINTERNAL.
func mapErr(err error, op string) error {
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
		if retryableReply(reply.Error()) {
			return unavailable(err, op)
		}
		return redstate.Wrap(redstate.EINTERNAL, err, op+": unexpected Redis reply")
	}
	return unavailable(err, op)
}

// ctxOrMapErr returns ctx.Err() when ctx has ended (the Broker contract for Dequeue), else
// mapErr(err, op).
func ctxOrMapErr(ctx context.Context, err error, op string) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return mapErr(err, op)
}

// unavailable wraps err as EUNAVAILABLE.
func unavailable(err error, op string) error {
	return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": Redis is unavailable")
}

// retryableReply reports whether an error reply means "not now" rather than "never".
func retryableReply(msg string) bool {
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY", "NOREPLICAS", "OOM", "MOVED", "ASK", "NOSCRIPT", "UNBLOCKED"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isMoved reports whether err is a MOVED/ASK redirect met on a connection to one node (the
// slot map changed): the caller reloads the Cluster state so that the next call goes right.
func isMoved(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")
}
