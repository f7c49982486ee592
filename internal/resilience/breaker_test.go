package resilience

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/metrics"
)

var (
	errDown     = redstate.Errorf(redstate.EUNAVAILABLE, "redis down")
	errNotFound = redstate.Errorf(redstate.ENOTFOUND, "no such build")
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestBreaker(t *testing.T, wait time.Duration) (*Breaker, *metrics.Metrics) {
	t.Helper()
	m := metrics.New()
	b, err := NewBreaker("buildstatus", Options{BreakerConfig: BreakerConfig{
		FailureRateThreshold: 50, SlidingWindowSize: 10, WaitDurationInOpenState: wait,
	}}, m, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	return b, m
}

func call(b *Breaker, err error) (called bool, got error) {
	got = b.Do(context.Background(), func() error { called = true; return err })
	return called, got
}

// gauge returns the value of a single-series metric family from m's registry.
func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			mt := f.GetMetric()[0]
			if mt.GetGauge() != nil {
				return mt.GetGauge().GetValue()
			}
			return mt.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func TestBreaker_OpensAtFailureRateThreshold(t *testing.T) {
	b, m := newTestBreaker(t, time.Hour)
	for range 5 {
		call(b, nil)
	}
	for i := range 4 {
		call(b, errDown)
		if b.State() != metrics.BreakerClosed {
			t.Fatalf("open after %d failures of %d calls, want closed until 5 of the last 10", i+1, 6+i)
		}
	}
	call(b, errDown) // 5 failures in the last 10 calls = 50 %
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s after 5/10 failures, want open", b.State())
	}
	if got := gauge(t, m, "redstate_breaker_state"); got != 2 {
		t.Errorf("redstate_breaker_state = %v, want 2 (open)", got)
	}
	called, err := call(b, nil)
	if called {
		t.Fatal("open breaker let a call through")
	}
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) || !strings.Contains(err.Error(), "redis circuit breaker open; retry in 3600s") {
		t.Fatalf("open breaker error = %v, want EUNAVAILABLE 'redis circuit breaker open; retry in 3600s'", err)
	}
	if b.Allow() {
		t.Error("Allow() = true while open")
	}
}

func TestBreaker_OnlyUnavailableCounts(t *testing.T) {
	b, _ := newTestBreaker(t, time.Hour)
	others := []error{
		errNotFound,
		redstate.Errorf(redstate.EINVALID, "bad"),
		redstate.Errorf(redstate.EPRECONDITION, "etag"),
		redstate.Errorf(redstate.ECONFLICT, "project"),
		redstate.Errorf(redstate.EINTERNAL, "bug"),
	}
	for range 4 {
		for _, err := range others {
			call(b, err)
		}
	}
	if b.State() != metrics.BreakerClosed {
		t.Fatalf("state = %s after only non-connectivity errors, want closed", b.State())
	}
}

func TestBreaker_CanceledCallDoesNotCount(t *testing.T) {
	b, _ := newTestBreaker(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 {
		_ = b.Do(ctx, func() error { return errDown })
	}
	if b.State() != metrics.BreakerClosed {
		t.Fatalf("state = %s after canceled calls, want closed", b.State())
	}
}

func TestBreaker_HalfOpensAfterWaitThenCloses(t *testing.T) {
	const wait = 50 * time.Millisecond
	b, m := newTestBreaker(t, wait)
	for range 5 {
		call(b, errDown)
	}
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s, want open", b.State())
	}
	opened := time.Now()
	deadline := opened.Add(5 * time.Second)
	for !b.Allow() {
		if time.Now().After(deadline) {
			t.Fatal("breaker never allowed a call after the open wait")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if since := time.Since(opened); since < wait-5*time.Millisecond {
		t.Fatalf("breaker allowed a call %s after opening, want >= %s", since, wait)
	}
	if called, _ := call(b, nil); !called {
		t.Fatal("trial call not let through after the wait")
	}
	if b.State() != metrics.BreakerHalfOpen {
		t.Fatalf("state = %s after the first trial, want half-open", b.State())
	}
	for range 5 {
		call(b, nil)
	}
	if b.State() != metrics.BreakerClosed {
		t.Fatalf("state = %s after 6 successful trials, want closed", b.State())
	}
	if got := gauge(t, m, "redstate_breaker_state"); got != 0 {
		t.Errorf("redstate_breaker_state = %v, want 0 (closed)", got)
	}
}

func TestBreaker_HalfOpenReopensOnFailures(t *testing.T) {
	b, _ := newTestBreaker(t, 20*time.Millisecond)
	for range 5 {
		call(b, errDown)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !b.Allow() {
		if time.Now().After(deadline) {
			t.Fatal("breaker never half-opened")
		}
		time.Sleep(2 * time.Millisecond)
	}
	for range 5 {
		call(b, errDown)
	}
	if b.State() != metrics.BreakerOpen {
		t.Fatalf("state = %s after failed trials, want open again", b.State())
	}
}

func TestNewBreaker_RejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]Options{
		"rate over 100": {BreakerConfig: BreakerConfig{FailureRateThreshold: 150}},
		"bad policy":    {Policy: "retry-forever"},
		"negative wait": {BreakerConfig: BreakerConfig{WaitDurationInOpenState: -time.Second}},
	} {
		if _, err := NewBreaker("b", cfg, nil, quietLog()); err == nil {
			t.Errorf("%s: NewBreaker accepted %+v", name, cfg)
		}
	}
	if _, err := NewBreaker("b", Options{}, nil, quietLog()); err != nil {
		t.Errorf("zero config (all defaults) rejected: %v", err)
	}
}

// TestBreaker_DoIfClosedNeverServesAsTrialCall: once the open wait is over, Do lets trial calls
// through but DoIfClosed keeps failing at once until the trials close the breaker.
func TestBreaker_DoIfClosedNeverServesAsTrialCall(t *testing.T) {
	b, _ := newTestBreaker(t, 10*time.Millisecond)
	for range 5 {
		call(b, errDown)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !b.Allow() {
		if time.Now().After(deadline) {
			t.Fatal("breaker never allowed a call after the open wait")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ran := false
	if err := b.DoIfClosed(context.Background(), func() error { ran = true; return nil }); ran || !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("DoIfClosed after the wait: ran %v, err %v; want refused without running", ran, err)
	}
	for range 6 {
		call(b, nil) // trial calls through Do close it
	}
	if err := b.DoIfClosed(context.Background(), func() error { ran = true; return nil }); !ran || err != nil {
		t.Fatalf("DoIfClosed when closed: ran %v, err %v", ran, err)
	}
}

// TestOptionsValidateAt_ReportsEveryProblemUnderPrefix: the section's place in the
// configuration prefixes every key, and every problem is reported.
func TestOptionsValidateAt_ReportsEveryProblemUnderPrefix(t *testing.T) {
	o := DefaultOptions()
	o.Fallback = "disk"
	o.FailureRateThreshold = 101
	o.WriteBackInterval = -time.Second
	err := o.ValidateAt("feed.resilience.")
	for _, w := range []string{
		`feed.resilience.fallback: "disk" is not supported`,
		"feed.resilience.failure-rate-threshold: must be a percentage between 1 and 100, got 101",
		"feed.resilience.write-back-interval: must be positive, got -1s",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want it to contain %q", err, w)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestBreaker_TransitionsUnderConcurrentCalls: many callers failing and succeeding at once
// drive the breaker through open, half-open and closed again and again; the transition
// listener must not read the counters those calls write (run with -race: reading the event's
// metrics did, in make test's Sentinel failover test).
func TestBreaker_TransitionsUnderConcurrentCalls(t *testing.T) {
	b, m := newTestBreaker(t, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 400 {
				var err error = errDown
				if (g+i)%3 == 0 {
					err = nil
				}
				call(b, err)
				if i%50 == 0 {
					time.Sleep(2 * time.Millisecond) // let the wait elapse so the breaker half-opens
				}
			}
		})
	}
	wg.Wait()
	if n := transitions(t, m); n < 2 {
		t.Fatalf("the breaker changed state %v times; the test meant to drive it through many transitions", n)
	}
}

// transitions sums redstate_breaker_transitions_total over its series.
func transitions(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range fams {
		if f.GetName() == "redstate_breaker_transitions_total" {
			for _, s := range f.GetMetric() {
				n += s.GetCounter().GetValue()
			}
		}
	}
	return n
}
