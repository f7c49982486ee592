// Package leasetest is the conformance suite of package lease: every Store (memory, Redis on a
// standalone server, behind Sentinel and on a 3-master Cluster) runs Run from its tests, and
// the Redis store runs RunFailover, so all keep the contract documented on lease.Store.
//
// Requirements on a store under test: Harness.Keys returns keys no other test uses (subtests
// run in parallel); TTLs of a few hundred milliseconds must be honoured to within about a
// second (the suite polls with a deadline, never sleeps a fixed time for a condition).
package leasetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
)

// Harness is what Run needs of one store.
type Harness struct {
	// Store is the store under test, of this test only or shared.
	Store lease.Store
	// Keys returns the keys of a lease no other test uses.
	Keys func() lease.Keys
	// LoseCounter makes the fence counter of keys disappear, as its expiry, FLUSHALL or a
	// restart without persistence does.
	LoseCounter func(t *testing.T, keys lease.Keys)
	// SetCounter overwrites the fence counter of keys with v: a counter behind, as on a
	// replica promoted by a failover that lost its last writes, or ahead of the clock, as
	// written by a master whose clock ran ahead. Nil for a store that has no such state (the
	// memory store has one clock and no replica): the tests that need it are skipped.
	SetCounter func(t *testing.T, keys lease.Keys, v int64)
}

// waitFor bounds every poll for a condition.
const waitFor = 10 * time.Second

// shortTTL is the TTL the expiry tests use.
const shortTTL = 200 * time.Millisecond

// NewHarness returns the harness of one test: a store whose clock and counters no other test
// changes (LoseCounter may touch this test's store only), or a shared one with unique keys.
type NewHarness func(t *testing.T) Harness

// Run checks the lease.Store contract on the stores of newHarness: mutual exclusion (also
// under concurrent contention), renew and release by the holder only, expiry, and fences
// strictly increasing, also across a lost counter and a counter that went back or ran ahead.
func Run(t *testing.T, newHarness NewHarness) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"MutualExclusion", mutualExclusion},
		{"AcquireSentTwiceAnswersItsFence", acquireSentTwice},
		{"OnlyTheHolderRenewsAndReleases", onlyTheHolder},
		{"RenewOutlivesTheFirstTTL", renewOutlives},
		{"ExpiryFreesTheLease", expiryFrees},
		{"FencesStrictlyIncrease", fencesIncrease},
		{"FenceAboveEveryEarlierAfterTheCounterIsLost", fenceAfterLostCounter},
		{"FenceAboveEveryEarlierAfterTheCounterWentBack", fenceAfterCounterWentBack},
		{"FenceAboveACounterAheadOfTheClock", fenceAboveCounterAhead},
		{"ConcurrentHoldersNeverOverlap", concurrentHolders},
		{"Invalid", invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newHarness(t))
		})
	}
}

var tokens atomic.Int64

// token returns a token unique in the test binary.
func token(who string) string { return fmt.Sprintf("%s-%d", who, tokens.Add(1)) }

// acquire takes keys for a new token, failing t unless it was free.
func acquire(t *testing.T, s lease.Store, keys lease.Keys, ttl time.Duration) (string, int64) {
	t.Helper()
	tok := token("holder")
	fence, ok, err := s.TryAcquire(t.Context(), keys, tok, ttl)
	if err != nil || !ok || fence <= 0 {
		t.Fatalf("acquire %s = %d, %v, %v; want a positive fence", keys.Lease, fence, ok, err)
	}
	return tok, fence
}

// release releases keys held by tok, failing t unless it was held.
func release(t *testing.T, s lease.Store, keys lease.Keys, tok string) {
	t.Helper()
	if held, err := s.Release(t.Context(), keys, tok); err != nil || !held {
		t.Fatalf("release %s by its holder = %v, %v", keys.Lease, held, err)
	}
}

// wantHolder fails t unless keys is held by want ("" free).
func wantHolder(t *testing.T, s lease.Store, keys lease.Keys, want string) {
	t.Helper()
	if got, err := s.Holder(t.Context(), keys); err != nil || got != want {
		t.Fatalf("holder of %s = %q, %v; want %q", keys.Lease, got, err, want)
	}
}

// eventually polls cond until it holds, failing t after waitFor.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitFor, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mutualExclusion(t *testing.T, h Harness) {
	ctx, s, keys := t.Context(), h.Store, h.Keys()
	wantHolder(t, s, keys, "")
	a, _ := acquire(t, s, keys, time.Minute)
	wantHolder(t, s, keys, a)
	if f, ok, err := s.TryAcquire(ctx, keys, token("other"), time.Minute); err != nil || ok || f != 0 {
		t.Fatalf("second acquire of a held lease = %d, %v, %v; want refused", f, ok, err)
	}
	wantHolder(t, s, keys, a)
	other := h.Keys()
	b, _ := acquire(t, s, other, time.Minute)
	wantHolder(t, s, other, b)
	wantHolder(t, s, keys, a)
}

func acquireSentTwice(t *testing.T, h Harness) {
	ctx, s, keys := t.Context(), h.Store, h.Keys()
	tok, fence := acquire(t, s, keys, time.Minute)
	// The copy of the same call (same token) finds the lease its first copy took.
	again, ok, err := s.TryAcquire(ctx, keys, tok, time.Minute)
	if err != nil || !ok || again != fence {
		t.Fatalf("acquire sent again = %d, %v, %v; want the first copy's fence %d", again, ok, err, fence)
	}
	wantHolder(t, s, keys, tok)
}

func onlyTheHolder(t *testing.T, h Harness) {
	ctx, s, keys := t.Context(), h.Store, h.Keys()
	a, _ := acquire(t, s, keys, time.Minute)
	if held, err := s.Renew(ctx, keys, "forged", time.Minute); err != nil || held {
		t.Fatalf("renew by another token = %v, %v; want refused", held, err)
	}
	if held, err := s.Release(ctx, keys, "forged"); err != nil || held {
		t.Fatalf("release by another token = %v, %v; want refused", held, err)
	}
	wantHolder(t, s, keys, a)
	if held, err := s.Renew(ctx, keys, a, time.Minute); err != nil || !held {
		t.Fatalf("renew by the holder = %v, %v", held, err)
	}
	release(t, s, keys, a)
	wantHolder(t, s, keys, "")
	if held, err := s.Release(ctx, keys, a); err != nil || held {
		t.Fatalf("second release = %v, %v; want not held", held, err)
	}
	if held, err := s.Renew(ctx, keys, a, time.Minute); err != nil || held {
		t.Fatalf("renew after release = %v, %v; want not held", held, err)
	}
	b, _ := acquire(t, s, keys, time.Minute)
	// The old holder's token touches nothing of the next holder's lease.
	if held, err := s.Release(ctx, keys, a); err != nil || held {
		t.Fatalf("stale release = %v, %v; want refused", held, err)
	}
	if held, err := s.Renew(ctx, keys, a, time.Minute); err != nil || held {
		t.Fatalf("stale renew = %v, %v; want refused", held, err)
	}
	wantHolder(t, s, keys, b)
}

func renewOutlives(t *testing.T, h Harness) {
	ctx, s, keys := t.Context(), h.Store, h.Keys()
	var a string
	for {
		sent := time.Now()
		a, _ = acquire(t, s, keys, shortTTL)
		held, err := s.Renew(ctx, keys, a, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if held {
			break
		}
		if time.Since(sent) < shortTTL {
			t.Fatal("renew by the holder within the lease's TTL refused")
		}
		// The machine stalled past the TTL between acquire and renew: the lease expired, as
		// it should; take it again.
	}
	time.Sleep(2 * shortTTL) // the condition here is elapsed time: the lease outlives its first TTL
	wantHolder(t, s, keys, a)
	if _, ok, err := s.TryAcquire(ctx, keys, token("thief"), time.Minute); err != nil || ok {
		t.Fatalf("acquire of a renewed lease past its first TTL = %v, %v; want refused", ok, err)
	}
}

func expiryFrees(t *testing.T, h Harness) {
	ctx, s, keys := t.Context(), h.Store, h.Keys()
	a, fa := acquire(t, s, keys, shortTTL)
	var fb int64
	eventually(t, "the expired lease to be free", func() bool {
		var ok bool
		var err error
		fb, ok, err = s.TryAcquire(ctx, keys, token("next"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if fb <= fa {
		t.Fatalf("fence %d after the expired holder's %d", fb, fa)
	}
	if held, err := s.Renew(ctx, keys, a, time.Minute); err != nil || held {
		t.Fatalf("renew by the expired holder = %v, %v; want refused", held, err)
	}
}

func fencesIncrease(t *testing.T, h Harness) {
	s, keys := h.Store, h.Keys()
	var last int64
	for i := range 200 {
		tok, fence := acquire(t, s, keys, time.Minute)
		if fence <= last {
			t.Fatalf("cycle %d: fence %d after %d", i, fence, last)
		}
		last = fence
		release(t, s, keys, tok)
	}
}

func fenceAfterLostCounter(t *testing.T, h Harness) {
	s, keys := h.Store, h.Keys()
	a, fa := acquire(t, s, keys, time.Minute)
	release(t, s, keys, a)
	h.LoseCounter(t, keys)
	_, fb := acquire(t, s, keys, time.Minute)
	if fb <= fa {
		t.Fatalf("fence %d after the counter was lost: want above the earlier %d", fb, fa)
	}
}

func fenceAfterCounterWentBack(t *testing.T, h Harness) {
	if h.SetCounter == nil {
		t.Skip("the store's counter cannot go back")
	}
	s, keys := h.Store, h.Keys()
	var fences []int64
	for range 2 {
		tok, f := acquire(t, s, keys, time.Minute)
		release(t, s, keys, tok)
		fences = append(fences, f)
	}
	f1, f2 := fences[0], fences[1]
	if f2 <= f1 {
		t.Fatalf("fences %d then %d: want increasing", f1, f2)
	}
	// A failover lost the second acquisition's write: the counter is back at f1.
	h.SetCounter(t, keys, f1)
	if _, f := acquire(t, s, keys, time.Minute); f <= f2 {
		t.Fatalf("fence %d after the counter went back to %d: want above every earlier fence (%d)", f, f1, f2)
	}
}

func fenceAboveCounterAhead(t *testing.T, h Harness) {
	if h.SetCounter == nil {
		t.Skip("the store's counter cannot run ahead of its clock")
	}
	s, keys := h.Store, h.Keys()
	const ahead = int64(5e15) // µs in the year 2128, below 2^53 (Lua numbers are doubles)
	h.SetCounter(t, keys, ahead)
	for want := ahead + 1; want <= ahead+2; want++ {
		tok, f := acquire(t, s, keys, time.Minute)
		if f != want {
			t.Fatalf("fence = %d, want %d (the counter plus one)", f, want)
		}
		release(t, s, keys, tok)
	}
}

// concurrentHolders has workers goroutines contend for a few leases for a while: each that
// acquires marks the lease held, checks nobody else marked it, and that its fence is above the
// last one seen on that lease, then unmarks and releases.
func concurrentHolders(t *testing.T, h Harness) {
	const workers, leases, rounds = 8, 3, 60
	s := h.Store
	keys := make([]lease.Keys, leases)
	for i := range keys {
		keys[i] = h.Keys()
	}
	var (
		mu        sync.Mutex
		holder    = make([]string, leases)
		lastFence = make([]int64, leases)
		acquired  atomic.Int64
		wg        sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				n := (w + i) % leases
				tok := token(fmt.Sprintf("worker-%d", w))
				fence, ok, err := s.TryAcquire(context.Background(), keys[n], tok, 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				acquired.Add(1)
				mu.Lock()
				if holder[n] != "" {
					t.Errorf("%s acquired %s while %s holds it", tok, keys[n].Lease, holder[n])
				}
				if fence <= lastFence[n] {
					t.Errorf("%s: fence %d after %d", keys[n].Lease, fence, lastFence[n])
				}
				holder[n], lastFence[n] = tok, fence
				mu.Unlock()
				time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
				mu.Lock()
				holder[n] = ""
				mu.Unlock()
				if held, err := s.Release(context.Background(), keys[n], tok); err != nil || !held {
					t.Errorf("release %s by its holder = %v, %v", keys[n].Lease, held, err)
				}
			}
		})
	}
	wg.Wait()
	if acquired.Load() < leases {
		t.Fatalf("only %d acquisitions: too little to prove anything", acquired.Load())
	}
}

func invalid(t *testing.T, h Harness) {
	ctx, s, keys := t.Context(), h.Store, h.Keys()
	wantInvalid := func(what string, err error) {
		t.Helper()
		if !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("%s: %v, want EINVALID", what, err)
		}
	}
	for _, bad := range []lease.Keys{
		{},
		{Lease: keys.Lease},
		{Fence: keys.Fence},
		{Lease: keys.Lease, Fence: keys.Lease},
		{Lease: "{a}lease", Fence: "{b}fence"},
	} {
		_, _, err := s.TryAcquire(ctx, bad, "tok", time.Minute)
		wantInvalid(fmt.Sprintf("acquire with keys %+v", bad), err)
		_, err = s.Renew(ctx, bad, "tok", time.Minute)
		wantInvalid(fmt.Sprintf("renew with keys %+v", bad), err)
		_, err = s.Release(ctx, bad, "tok")
		wantInvalid(fmt.Sprintf("release with keys %+v", bad), err)
		_, err = s.Holder(ctx, bad)
		wantInvalid(fmt.Sprintf("holder with keys %+v", bad), err)
	}
	_, _, err := s.TryAcquire(ctx, keys, "", time.Minute)
	wantInvalid("acquire with an empty token", err)
	_, _, err = s.TryAcquire(ctx, keys, "tok", 0)
	wantInvalid("acquire with a zero TTL", err)
	_, err = s.Renew(ctx, keys, "tok", time.Microsecond)
	wantInvalid("renew with a TTL under 1ms", err)
	_, err = s.Release(ctx, keys, "")
	wantInvalid("release with an empty token", err)
	wantHolder(t, s, keys, "")
}
