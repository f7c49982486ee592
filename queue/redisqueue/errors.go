package redisqueue

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/rediserr"
)

// mapErr turns a go-redis error into a *redstate.Error (see rediserr.Map).
func mapErr(err error, op string) error { return rediserr.Map(err, op) }

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
func unavailable(err error, op string) error { return rediserr.Unavailable(err, op) }

// isMoved tells whether err is a MOVED/ASK redirect met on a connection to one node (the
// slot map changed): the caller reloads the Cluster state so that the next call goes right.
func isMoved(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")
}
