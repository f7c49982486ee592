package redisconn

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reachability answers "does Redis answer?" for health checks and the dashboard, pinging at
// most once per ReachabilityTTL however many components and requests ask. A nil
// *Reachability (no Redis configured) always answers reachable.
type Reachability struct {
	client redis.UniversalClient
	mu     sync.Mutex
	at     time.Time
	err    error
	took   time.Duration
}

// ReachabilityTTL is how long one ping's answer is reused.
const ReachabilityTTL = 500 * time.Millisecond

// NewReachability returns the cached reachability check of client; nil for a nil client.
func NewReachability(client redis.UniversalClient) *Reachability {
	if client == nil {
		return nil
	}
	return &Reachability{client: client}
}

// Check pings Redis (or reuses an answer younger than ReachabilityTTL) and returns the round
// trip of the ping and its error (nil: reachable, or no Redis configured).
func (r *Reachability) Check(ctx context.Context) (time.Duration, error) {
	if r == nil {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < ReachabilityTTL {
		return r.took, r.err
	}
	start := time.Now()
	r.err = Ping(ctx, r.client)
	r.took, r.at = time.Since(start), time.Now()
	return r.took, r.err
}
