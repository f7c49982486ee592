package resilience

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/redisconn"
)

// topologyReplies are the error replies of a server that is not, or not yet, where the client
// should write: a replica (READONLY), a replica cut off from its master (MASTERDOWN), a server
// still loading its data (LOADING), a Cluster reconfiguring (CLUSTERDOWN, TRYAGAIN, and a
// redirection left over after go-redis's own). They pass once the client reaches the new
// master, which the probe's ping sees.
var topologyReplies = []string{"READONLY", "MASTERDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK"}

// seenUnreachable reports whether a failure that counts against the breaker says that Redis
// could not be reached or is changing master, so that a ping that answers afterwards means the
// calls would pass again. It is false for what Redis answered and a ping does not see: a
// refusal such as NOREPLICAS, BUSY, OOM or NOPERM, and a write that fewer replicas than
// redis.durability.wait-replicas acknowledged (redisconn.ErrNotDurable). Transport failures
// (refused or reset connections, timeouts, closed connections, also under a failed WAIT) and
// anything else are true.
func seenUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[net.Error](err); ok || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || rediserr.IsTimeout(err) {
		return true
	}
	if reply, ok := errors.AsType[redis.Error](err); ok {
		msg := reply.Error()
		for _, p := range topologyReplies {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return !errors.Is(err, redisconn.ErrNotDurable)
}
