package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redstate/redstate"
)

// Leader runs work on one instance at a time: every instance runs the same Leader (same Store
// and Keys), one holds the lease and works, the others wait to take over. A single-leader job
// needs only Run:
//
//	l := lease.Leader{Store: store, Keys: keys, TTL: 10 * time.Second}
//	err := l.Run(ctx, func(ctx context.Context, g lease.Grant) error {
//		// work until ctx ends (the lease lost, or Run stopping); pass g.Fence to every write
//	})
//
// Acquire and Hold are its two steps, for a caller that runs its own loop around them.
type Leader struct {
	// Store holds the lease.
	Store Store
	// Keys name it.
	Keys Keys
	// TTL is the lease's TTL: how long the lease outlives a holder that stopped renewing
	// (crashed, cut off) before another instance takes over.
	TTL time.Duration
	// Renew is how often Hold renews the lease. Zero: TTL/3.
	Renew time.Duration
	// Retry is how often Run tries to acquire the lease while another instance holds it or the
	// store fails. Zero: TTL/5.
	Retry time.Duration
	// OnError, when set, receives the failures Run retries: an acquisition that failed, a job
	// that returned an error, a release that failed.
	OnError func(error)
}

// validate reports EINVALID for a Leader that cannot run.
func (l Leader) validate() error {
	if l.Store == nil {
		return redstate.Errorf(redstate.EINVALID, "lease: the leader needs a store")
	}
	if l.TTL < MinTTL || l.Renew < 0 || l.Retry < 0 {
		return redstate.Errorf(redstate.EINVALID, "lease: the leader needs a TTL of at least %s and no negative interval (TTL %s, renew %s, retry %s)", MinTTL, l.TTL, l.Renew, l.Retry)
	}
	return l.Keys.Validate()
}

func (l Leader) renewEvery() time.Duration {
	if l.Renew > 0 {
		return l.Renew
	}
	return max(l.TTL/3, time.Millisecond)
}

func (l Leader) retryEvery() time.Duration {
	if l.Retry > 0 {
		return l.Retry
	}
	return max(l.TTL/5, time.Millisecond)
}

// Acquire tries once to take the lease with a new token (NewToken); ok false when another
// instance holds it.
func (l Leader) Acquire(ctx context.Context) (g Grant, ok bool, err error) {
	if err := l.validate(); err != nil {
		return Grant{}, false, err
	}
	g = Grant{Token: NewToken(), Sent: time.Now()}
	g.Fence, ok, err = l.Store.TryAcquire(ctx, l.Keys, g.Token, l.TTL)
	if err != nil || !ok {
		return Grant{}, false, err
	}
	return g, true, nil
}

// Hold keeps g, an acquisition of l's lease, by renewing it every Renew until ctx ends or stop
// is called. The returned context ends with ctx, or when the lease is lost, with a cause
// wrapping ErrLost: a renewal found the lease gone or held by another token, or renewals
// failed until its local expiry (TTL after the last renewal sent, or after g.Sent). stop ends
// the renewals, waits for them, and releases the lease if it still holds g's token, on a
// context of its own bounded by TTL (a release that fails leaves the lease to expire); it
// returns the release's error and may be called more than once.
func (l Leader) Hold(ctx context.Context, g Grant) (held context.Context, stop func() error) {
	held, lost := context.WithCancelCause(ctx)
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		l.keep(held, g, lost)
	}()
	return held, sync.OnceValue(func() error {
		lost(nil)
		<-renewing
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.TTL)
		defer cancel()
		_, err := l.Store.Release(rctx, l.Keys, g.Token)
		return err
	})
}

// keep renews g every Renew until ctx ends, and calls lost when the lease is lost (Hold).
func (l Leader) keep(ctx context.Context, g Grant, lost context.CancelCauseFunc) {
	every := l.renewEvery()
	expiry := g.Sent.Add(l.TTL)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every)
		ok, err := l.Store.Renew(rctx, l.Keys, g.Token, l.TTL)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && ok:
			expiry = sent.Add(l.TTL)
		case err == nil:
			lost(fmt.Errorf("%w: %s no longer holds this instance's token (expired, taken over or deleted)", ErrLost, l.Keys.Lease))
			return
		case time.Now().After(expiry):
			lost(fmt.Errorf("%w: %s not renewed before its expiry: %w", ErrLost, l.Keys.Lease, err))
			return
		}
	}
}

// Run runs job whenever this instance holds the lease, until ctx ends (then it returns nil)
// or the Leader is invalid (EINVALID). It tries to acquire the lease every Retry; once it
// holds it, it calls job with a context that ends when the lease is lost (cause ErrLost) or ctx
// ends, renewing meanwhile (Hold). When job returns, Run releases the lease; after a job that
// returned because the lease was lost, Run waits a whole TTL before trying again, so that an
// instance that was waiting, and tries more often, takes over. A job that returns early (nil
// or an error, reported to OnError) is run again at the next acquisition, after Retry.
func (l Leader) Run(ctx context.Context, job func(ctx context.Context, g Grant) error) error {
	if err := l.validate(); err != nil {
		return err
	}
	report := func(err error) {
		if err != nil && l.OnError != nil {
			l.OnError(err)
		}
	}
	for ctx.Err() == nil {
		wait := l.retryEvery()
		g, ok, err := l.Acquire(ctx)
		switch {
		case err != nil:
			report(err)
		case ok:
			held, stop := l.Hold(ctx, g)
			jerr := job(held, g)
			lostIt := errors.Is(context.Cause(held), ErrLost)
			if jerr != nil && ctx.Err() == nil && !lostIt {
				report(jerr)
			}
			report(stop())
			if lostIt {
				report(context.Cause(held))
				wait = l.TTL
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}
