package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redisconn"
)

// fakeProbe answers or fails as told and counts its pings.
type fakeProbe struct {
	answer atomic.Bool
	pings  atomic.Int64
}

func (p *fakeProbe) ping(context.Context) error {
	p.pings.Add(1)
	if p.answer.Load() {
		return nil
	}
	return rediserr.Map(refused(), "ping")
}

// refused is the error of a dial to a server that is gone.
func refused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errors.New("connection refused"))}
}

// replyErr is an error reply as go-redis reports it (it implements redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// newProbedBreaker returns a breaker that stays open for an hour unless its probe ends the wait,
// probing every millisecond, closed in t.Cleanup.
func newProbedBreaker(t *testing.T, p *fakeProbe) *Breaker {
	t.Helper()
	b, err := NewBreaker("buildstatus", Options{BreakerConfig: BreakerConfig{WaitDurationInOpenState: time.Hour, ProbeInterval: time.Millisecond}},
		metrics.New(), quietLog(), WithProbe(p.ping))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// openWith fails five calls with err, which opens b.
func openWith(t *testing.T, b *Breaker, err error) {
	t.Helper()
	for range 5 {
		call(b, err)
	}
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s after 5 failures, want open", b.State())
	}
}

// awaitState waits until b is in state want, failing the test after a generous deadline.
func awaitState(t *testing.T, b *Breaker, want State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for b.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("breaker still %s, want %s", b.State(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// awaitPings waits until p has pinged at least n times.
func awaitPings(t *testing.T, p *fakeProbe, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.pings.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("probe pinged %d times, want at least %d", p.pings.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBreaker_ProbeClosesWhenRedisAnswersAgain: a breaker opened by refused connections stays
// open while its probe fails, and closes as soon as the probe answers, long before its hour of
// wait.
func TestBreaker_ProbeClosesWhenRedisAnswersAgain(t *testing.T) {
	p := &fakeProbe{}
	b := newProbedBreaker(t, p)
	openWith(t, b, rediserr.Map(refused(), "save"))
	awaitPings(t, p, 3)
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s while the probe fails, want open", b.State())
	}
	if called, err := call(b, nil); called || !IsRefused(err) {
		t.Fatalf("call while open: called %v, err %v; want refused", called, err)
	}
	p.answer.Store(true)
	awaitState(t, b, metrics.BreakerClosed)
	if called, err := call(b, nil); !called || err != nil {
		t.Fatalf("call after the probe closed the breaker: called %v, err %v", called, err)
	}
}

// TestBreaker_ProbeOfTopologyChangeCloses: READONLY (the client still on a demoted master) is a
// topology change; a ping that answers ends the wait at once.
func TestBreaker_ProbeOfTopologyChangeCloses(t *testing.T) {
	p := &fakeProbe{}
	p.answer.Store(true)
	b := newProbedBreaker(t, p)
	openWith(t, b, rediserr.Map(replyErr("READONLY You can't write against a read only replica."), "save"))
	awaitState(t, b, metrics.BreakerClosed)
}

// TestBreaker_ProbeDoesNotCutAnsweredFailures: when the calls failed on replies the probe does
// not see (BUSY), answering pings do not end the wait; once a ping fails (Redis went away) the
// next answer does.
func TestBreaker_ProbeDoesNotCutAnsweredFailures(t *testing.T) {
	p := &fakeProbe{}
	p.answer.Store(true)
	b := newProbedBreaker(t, p)
	openWith(t, b, rediserr.Map(replyErr("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT."), "save"))
	awaitPings(t, p, 5)
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s after answered pings, want open: the calls failed on a reply the probe does not see", b.State())
	}
	p.answer.Store(false)
	n := p.pings.Load()
	awaitPings(t, p, n+2) // at least one ping failed
	p.answer.Store(true)
	awaitState(t, b, metrics.BreakerClosed)
}

// TestBreaker_ProbeReopensOnFailedTrials: a probe that answered half-opens the breaker, and
// failing trial calls open it again; it closes once the probe answers again.
func TestBreaker_ProbeReopensOnFailedTrials(t *testing.T) {
	p := &fakeProbe{}
	b := newProbedBreaker(t, p)
	down := rediserr.Map(refused(), "save")
	openWith(t, b, down)
	b.cb.HalfOpen() // as the probe does after an answer
	for range 5 {
		call(b, down)
	}
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s after failed trials, want open", b.State())
	}
	p.answer.Store(true)
	awaitState(t, b, metrics.BreakerClosed)
}

// TestBreaker_CloseStopsTheProbe: after Close the probe no longer pings and the breaker still
// works.
func TestBreaker_CloseStopsTheProbe(t *testing.T) {
	p := &fakeProbe{}
	b := newProbedBreaker(t, p)
	openWith(t, b, rediserr.Map(refused(), "save"))
	awaitPings(t, p, 1)
	b.Close()
	n := p.pings.Load()
	p.answer.Store(true)
	b.Close() // idempotent
	if got := p.pings.Load(); got != n {
		t.Fatalf("probe pinged %d times after Close, want %d", got, n)
	}
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s, want open (no probe)", b.State())
	}
}

func TestProbeSees(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"refused":        {rediserr.Map(refused(), "save"), true},
		"eof":            {rediserr.Map(io.EOF, "save"), true},
		"other":          {rediserr.Map(errors.New("redis: all sentinels specified in configuration are unreachable"), "save"), true},
		"timeout":        {rediserr.Map(context.DeadlineExceeded, "save"), true},
		"readonly":       {rediserr.Map(replyErr("READONLY You can't write against a read only replica."), "save"), true},
		"clusterdown":    {rediserr.Map(replyErr("CLUSTERDOWN The cluster is down"), "save"), true},
		"loading":        {rediserr.Map(replyErr("LOADING Redis is loading the dataset in memory"), "save"), true},
		"noreplicas":     {rediserr.Map(replyErr("NOREPLICAS Not enough good replicas to write."), "save"), true},
		"oom":            {rediserr.Map(replyErr("OOM command not allowed when used memory > 'maxmemory'."), "save"), false},
		"busy":           {rediserr.Map(replyErr("BUSY Redis is busy running a script."), "save"), false},
		"noperm":         {rediserr.Map(replyErr("NOPERM this user has no permissions"), "save"), false},
		"not durable":    {redstate.Wrap(redstate.EUNAVAILABLE, notDurable(nil), "save"), true},
		"WAIT cut short": {redstate.Wrap(redstate.EUNAVAILABLE, notDurable(refused()), "save"), true},
	} {
		if got := probeSees(tc.err); got != tc.want {
			t.Errorf("%s: probeSees(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

// notDurable is the error of a write short of replicas (cause nil) or whose WAIT failed.
func notDurable(cause error) error {
	if cause == nil {
		return fmt.Errorf("%w: acknowledged by 0 of 1 replicas within 100ms", redisconn.ErrNotDurable)
	}
	return fmt.Errorf("%w: WAIT 1 100 failed: %w", redisconn.ErrNotDurable, cause)
}

// TestBreaker_ProbeBacksOffWhenCallsKeepFailing: Redis answers the probe while calls keep
// failing (one Cluster shard down): after the probe ended a wait that did not last, it may end
// the next one only after twice the probe interval (on the breaker's clock), not at once.
func TestBreaker_ProbeBacksOffWhenCallsKeepFailing(t *testing.T) {
	p := &fakeProbe{}
	p.answer.Store(true)
	b := newProbedBreaker(t, p)
	var clock atomic.Int64
	b.now = func() time.Time { return time.Unix(0, clock.Load()) }
	down := rediserr.Map(refused(), "save")
	openWith(t, b, down)
	awaitState(t, b, metrics.BreakerClosed) // the first end of the wait comes at once

	openWith(t, b, down) // and did not last
	awaitPings(t, p, p.pings.Load()+5)
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s: the probe ended the wait again at once, want it to back off", b.State())
	}
	clock.Add(int64(2 * time.Millisecond)) // twice the probe interval
	awaitState(t, b, metrics.BreakerClosed)
}
