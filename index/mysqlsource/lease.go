package mysqlsource

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/rediserr"
)

// errLeaseLost is the class of the errors of a fenced write refused or a renewal failed: another
// instance holds the binlog lease (or it was deleted, by expiry or by index resnapshot), so this
// one stops reading at once and goes back to standby.
var errLeaseLost = errors.New("binlog lease lost")

// lease is one acquisition of the binlog lease.
type lease struct {
	// token is unique to this acquisition; fence its number, above every earlier one's.
	token string
	fence int64
	// sent is when the acquisition was sent: the lease expires TTL after it at the latest.
	sent time.Time
}

// Leader returns the fence of the binlog lease this instance holds, ok false when it does not
// read the binlog (standby, starting, or failing to reach Redis).
func (s *Source) Leader() (fence int64, ok bool) {
	f := s.fence.Load()
	return f, f != 0
}

// Standby reports whether another instance held the binlog lease at this instance's last try.
func (s *Source) Standby() bool { return s.standby.Load() }

// newToken returns a token naming this process (for the operator reading the lease key) and
// unique to one acquisition.
func newToken() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%016x", host, os.Getpid(), rand.Uint64())
}

// acquire tries to take the lease once; ok false when another instance holds it.
func (s *Source) acquire(ctx context.Context) (l lease, ok bool, err error) {
	l = lease{token: newToken(), sent: time.Now()}
	l.fence, err = acquireScript.Run(ctx, s.opts.Redis, []string{s.keys.Lease, s.keys.Fence}, l.token, s.opts.LeaseTTL.Milliseconds()).Int64()
	if err != nil {
		return lease{}, false, rediserr.Map(err, "acquire the binlog lease")
	}
	return l, l.fence != 0, nil
}

// keepLease renews l every TTL/3 until ctx ends, and calls lost when a renewal finds the lease
// gone or held by another token, or when renewals failed until the lease's local expiry (TTL
// after the last successful renewal was sent).
func (s *Source) keepLease(ctx context.Context, l lease, lost context.CancelCauseFunc) {
	ttl := s.opts.LeaseTTL
	expiry := l.sent.Add(ttl)
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, ttl/3)
		n, err := renewScript.Run(rctx, s.opts.Redis, []string{s.keys.Lease}, l.token, ttl.Milliseconds()).Int()
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && n == 1:
			expiry = sent.Add(ttl)
		case err == nil:
			lost(fmt.Errorf("%w: the lease key no longer holds this instance's token (expired, taken over or deleted by index resnapshot)", errLeaseLost))
			return
		case time.Now().After(expiry):
			lost(fmt.Errorf("%w: not renewed before its expiry: %w", errLeaseLost, rediserr.Map(err, "renew the binlog lease")))
			return
		}
	}
}

// release deletes the lease if it still holds token, so that another instance takes over at
// its next attempt.
func (s *Source) release(ctx context.Context, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.LeaseTTL)
	defer cancel()
	if err := releaseScript.Run(ctx, s.opts.Redis, []string{s.keys.Lease}, token).Err(); err != nil {
		s.log.Warn("could not release the binlog lease; another instance takes over when it expires", "err", err)
	}
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

// lead reads the binlog while this instance holds l: snapshot and stream run under a context
// cancelled when the lease is lost; their failures back off as before (delay, returned for the
// next session) while the lease is kept. It returns when ctx ends (releasing the lease) or the
// lease is lost.
func (s *Source) lead(ctx context.Context, l lease, delay time.Duration) time.Duration {
	s.log.Info("binlog lease acquired: reading the binlog", "fence", l.fence)
	s.token = l.token
	s.fence.Store(l.fence)
	defer s.fence.Store(0)
	lctx, lost := context.WithCancelCause(ctx)
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		s.keepLease(lctx, l, lost)
	}()
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
	<-renewing
	s.release(ctx, l.token)
	if ctx.Err() == nil {
		s.log.Warn("binlog lease lost: stopped reading the binlog", "fence", l.fence, "err", context.Cause(lctx))
	}
	return delay
}
