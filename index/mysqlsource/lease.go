package mysqlsource

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/internal/rediserr"
)

// errLeaseLost is the class of the errors of a fenced write refused: another instance holds the
// binlog lease (or it was deleted, by expiry or by index resnapshot), so this one stops reading
// at once and goes back to standby. A renewal that fails ends the session the same way, with a
// cause wrapping lease.ErrLost.
var errLeaseLost = errors.New("binlog lease lost")

// newLeader returns the binlog lease (Keys.Lease, its fence counter Keys.Fence) on client with
// ttl: a fenced lease of internal/lease, renewed every ttl/3 while held.
func newLeader(client redis.UniversalClient, keys Keys, ttl time.Duration) (lease.Leader, error) {
	store, err := lease.NewRedis(client, lease.RedisOptions{})
	return lease.Leader{Store: store, Keys: lease.Keys{Lease: keys.Lease, Fence: keys.Fence}, TTL: ttl}, err
}

// Leader returns the fence of the binlog lease this instance holds, ok false when it does not
// read the binlog (standby, starting, or failing to reach Redis).
func (s *Source) Leader() (fence int64, ok bool) {
	f := s.fence.Load()
	return f, f != 0
}

// Standby reports whether another instance held the binlog lease at this instance's last try.
func (s *Source) Standby() bool { return s.standby.Load() }

// acquire tries to take the lease once with a new token (lease.NewToken); ok false when another
// instance holds it.
func (s *Source) acquire(ctx context.Context) (lease.Grant, bool, error) {
	return s.leases.Acquire(ctx)
}

// fenced runs a fenced write script (KEYS[1] the lease, ARGV[1] the token, then keys and args),
// mapping a refusal to errLeaseLost.
func (s *Source) fenced(ctx context.Context, what string, script *redis.Script, keys []string, args ...any) error {
	n, err := script.Run(ctx, s.opts.Redis, append([]string{s.keys.Lease}, keys...), append([]any{s.token}, args...)...).Int()
	if err != nil {
		return rediserr.Map(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s refused: another instance holds the lease (or it expired or was deleted)", errLeaseLost, what)
	}
	return nil
}

// lead reads the binlog while this instance holds g: snapshot and stream run under a context
// cancelled when the lease is lost (lease.Leader.Hold renews it meanwhile); their failures back
// off as before (delay, returned for the next session) while the lease is kept. It returns when
// ctx ends or the lease is lost, releasing the lease if it still holds it, so that another
// instance takes over at its next attempt instead of after the TTL.
func (s *Source) lead(ctx context.Context, g lease.Grant, delay time.Duration) time.Duration {
	s.log.Info("binlog lease acquired: reading the binlog", "fence", g.Fence)
	s.token = g.Token
	s.fence.Store(g.Fence)
	defer s.fence.Store(0)
	held, stop := s.leases.Hold(ctx, g)
	lctx, lost := context.WithCancelCause(held)
	for lctx.Err() == nil {
		progressed := false
		err := s.run(lctx, &progressed)
		if lctx.Err() != nil {
			break
		}
		if errors.Is(err, errLeaseLost) {
			lost(err)
			break
		}
		if progressed {
			delay = s.opts.ErrorDelay
		}
		s.log.Error("index mysql source failed; retrying", "err", err, "retry_in", delay.String())
		select {
		case <-lctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, s.opts.MaxErrorDelay)
	}
	lost(nil)
	if err := stop(); err != nil {
		s.log.Warn("could not release the binlog lease; another instance takes over when it expires", "err", err)
	}
	if ctx.Err() == nil {
		s.log.Warn("binlog lease lost: stopped reading the binlog", "fence", g.Fence, "err", context.Cause(lctx))
	}
	return delay
}
