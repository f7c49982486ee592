package redisstore

import "github.com/redstate/redstate/internal/rediserr"

// mapErr turns a go-redis error into a *redstate.Error (see rediserr.Map).
func mapErr(err error, op string) error { return rediserr.Map(err, op) }

// unavailable wraps err as EUNAVAILABLE.
func unavailable(err error, op string) error { return rediserr.Unavailable(err, op) }
