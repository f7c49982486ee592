package rediserr

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// IsTimeout reports whether err (possibly wrapped) is a timeout rather than a refusal: a
// context deadline, a network read or write timeout (go-redis's "i/o timeout"), or no pool
// connection freed in time. A timeout says that Redis, or the way to it, was slow for this call,
// which a large reply causes as surely as a sick server.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
