// Package lease is redstate's one fenced lease: a named right that one holder at a time keeps
// for a TTL, with a fence number per acquisition that is above every earlier acquisition's.
// The executor's tenant locks, the MySQL source's binlog lease and any single-leader job use it.
//
// A lease is two keys the caller names (Keys): the lease key, holding the holder's token with
// the lease's TTL, and the fence counter, holding the last fence issued. Acquire takes a free
// lease and issues the next fence in one atomic step; Renew extends it and Release deletes it,
// both only while it still holds the caller's token (compare-and-expire, compare-and-delete).
// A holder passes its fence to whatever it writes, so a store can refuse a write carrying a
// fence below one it has seen: a holder that lost its lease without knowing (paused, cut off)
// cannot overwrite the work of the one after it.
//
// A fence is the larger of the counter plus one and the server clock in microseconds, so fences
// grow even when the counter is lost (expired, flushed, or behind after a failover that lost its
// last writes). Store has a Redis implementation (standalone, Sentinel, Cluster) and a memory
// one with the same semantics; package leasetest is their conformance suite. Leader runs a job
// on one instance at a time on top of a Store.
package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// Keys name one lease: the caller's own keys, so that every lease keeps the key names and
// values its block documents.
type Keys struct {
	// Lease holds the holder's token, with the lease's TTL.
	Lease string
	// Fence is the fence counter: the last fence issued, as a decimal string, expiring
	// CounterTTL after the last acquisition. It must hash to Lease's Redis Cluster slot (share
	// its hash tag), so that one script reads and writes both.
	Fence string
}

// Validate reports EINVALID unless both keys are set, differ and share a Cluster slot.
func (k Keys) Validate() error {
	switch {
	case k.Lease == "" || k.Fence == "":
		return redstate.Errorf(redstate.EINVALID, "lease: the lease key and the fence counter key are required")
	case k.Lease == k.Fence:
		return redstate.Errorf(redstate.EINVALID, "lease: the lease key and the fence counter key must differ (both %q)", k.Lease)
	case keyspace.Slot(k.Lease) != keyspace.Slot(k.Fence):
		return redstate.Errorf(redstate.EINVALID, "lease: %q and %q hash to different Cluster slots; give them one hash tag", k.Lease, k.Fence)
	}
	return nil
}

// Store is a table of fenced leases. Every method is atomic on its lease. Errors: EINVALID
// (bad keys, token or TTL), EUNAVAILABLE (the backend cannot answer now), EINTERNAL (a key
// holds something that is not a lease).
type Store interface {
	// TryAcquire takes the lease for token with ttl if it is free (missing or expired) and
	// returns its new fence (ok true), stored in the counter, which then lives CounterTTL(ttl).
	// When another token holds it, ok is false. When token itself holds it (an acquisition
	// sent twice), ok is true with the fence in the counter. Tokens must be unique per
	// acquisition (NewToken).
	TryAcquire(ctx context.Context, keys Keys, token string, ttl time.Duration) (fence int64, ok bool, err error)
	// Renew sets the lease's TTL to ttl if it holds token; held false when it is gone or held
	// by another token.
	Renew(ctx context.Context, keys Keys, token string, ttl time.Duration) (held bool, err error)
	// Release deletes the lease if it holds token; held false when it was gone or held by
	// another token (nothing is deleted then).
	Release(ctx context.Context, keys Keys, token string) (held bool, err error)
	// Holder returns the token holding the lease, "" when it is free.
	Holder(ctx context.Context, keys Keys) (token string, err error)
}

// MinTTL is the shortest lease TTL: Redis expires keys in whole milliseconds.
const MinTTL = time.Millisecond

// CounterTTL is how long a fence counter lives after the last acquisition of its lease with
// ttl: 30 days, and at least twice the lease. Counters of leases not taken for that long
// expire, which bounds them to the leases used recently (a tenant lock per tenant). Losing the
// counter is safe: a fence is never below the server clock in microseconds, and a fence issued
// at time T is at most T.
func CounterTTL(ttl time.Duration) time.Duration { return max(30*24*time.Hour, 2*ttl) }

// checkCall validates the arguments every Store method shares.
func checkCall(keys Keys, token string, ttl time.Duration, withTTL bool) error {
	if err := keys.Validate(); err != nil {
		return err
	}
	if token == "" {
		return redstate.Errorf(redstate.EINVALID, "lease %s: the token is empty", keys.Lease)
	}
	if withTTL && ttl < MinTTL {
		return redstate.Errorf(redstate.EINVALID, "lease %s: the TTL must be at least %s, got %s", keys.Lease, MinTTL, ttl)
	}
	return nil
}

// NewToken returns a token naming this process (host and pid, for an operator reading the
// lease key) and unique to one acquisition: "<host>-<pid>-<16 hex digits>".
func NewToken() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%016x", host, os.Getpid(), rand.Uint64())
}

// Grant is one acquisition of a lease.
type Grant struct {
	// Token is the holder's token, unique to this acquisition.
	Token string
	// Fence is this acquisition's fence, above every earlier acquisition's.
	Fence int64
	// Sent is when the acquisition was sent: the lease ends TTL after it at the latest.
	Sent time.Time
}

// ErrLost is the class (errors.Is) of the cause of a Hold context cancelled because the lease
// was lost: a renewal found it gone or held by another token, or renewals failed until it
// expired.
var ErrLost = errors.New("lease lost")
