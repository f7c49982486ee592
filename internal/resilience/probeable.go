package resilience

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// probedReplies are the error replies of a server that is not, or not yet, where the client
// should write: a replica (READONLY), a replica cut off from its master (MASTERDOWN), a server
// still loading its data (LOADING), a Cluster reconfiguring (CLUSTERDOWN, TRYAGAIN, and a
// redirection left over after go-redis's own), and a master short of the good replicas its
// min-replicas-to-write asks for (NOREPLICAS). They pass once the client reaches a master with
// its replicas, which serve's probe checks (redisconn.Prober).
var probedReplies = []string{"READONLY", "MASTERDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK", "NOREPLICAS"}

// probeSees reports whether the probe's answer shows that calls failing with err would pass
// again, so that an answer may end the breaker's wait: Redis could not be reached (a refused,
// reset or closed connection, a timeout, no sentinel), is changing master or lacks replicas
// (probedReplies), or fewer replicas than redis.durability.wait-replicas acknowledged a write
// (serve's probe counts the replicas online). It is false for the other error replies, which a
// server answering the probe can give all along: BUSY, OOM, NOPERM and the like.
func probeSees(err error) bool {
	if err == nil {
		return false
	}
	reply, ok := errors.AsType[redis.Error](err)
	if !ok {
		return true
	}
	msg := reply.Error()
	for _, p := range probedReplies {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
