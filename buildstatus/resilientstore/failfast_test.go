package resilientstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/resilience"
)

func TestFailFast_UnavailableSurfacesAndBreakerOpens(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFailFast, time.Hour))
	ctx := context.Background()
	id := newID()
	if _, err := f.s.Save(ctx, doc(id, nil), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(true)
	for range 5 {
		if _, err := f.s.Get(ctx, id); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("Get while down = %v, want EUNAVAILABLE", err)
		}
	}
	if _, err := f.s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{}); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("fail-fast Save while down = %v, want EUNAVAILABLE (no fallback)", err)
	}
	if f.s.BreakerState() != "open" {
		t.Fatalf("breaker = %s after 5 connectivity failures, want open", f.s.BreakerState())
	}
	before := f.flaky.calls.Load()
	_, err := f.s.Get(ctx, id)
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) || !strings.Contains(err.Error(), "circuit breaker open") {
		t.Fatalf("Get with breaker open = %v, want EUNAVAILABLE from the breaker", err)
	}
	if f.flaky.calls.Load() != before {
		t.Fatal("open breaker still called Redis")
	}
	if f.s.Pending() != 0 {
		t.Fatalf("fail-fast recorded %d pending writes", f.s.Pending())
	}

	f.flaky.down.Store(false)
	eventually(t, "reads to succeed after the breaker's wait", func() bool {
		_, err := f.s.Get(ctx, id)
		return err == nil
	})
}

func TestFailFast_NotFoundIsNotABreakerFailure(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFailFast, time.Hour))
	for range 30 {
		if _, err := f.s.Get(context.Background(), newID()); !redstate.IsCode(err, redstate.ENOTFOUND) {
			t.Fatalf("Get of missing build = %v, want ENOTFOUND", err)
		}
	}
	if f.s.BreakerState() != "closed" {
		t.Fatalf("breaker = %s after not-found reads, want closed", f.s.BreakerState())
	}
}

func TestNew_FallbackNeedsMemoryStore(t *testing.T) {
	if _, err := New(&flaky{}, nil, resilience.Options{Policy: resilience.PolicyFallback}, nil, quietLog()); err == nil {
		t.Fatal("New accepted the fallback policy without a memory store")
	}
}

// TestFailFast_WatchFailuresDoNotOpenTheBreaker: a flood of failing subscriptions (for example
// a Redis client limit reached by event streams) must not open the breaker and so fail writes.
func TestFailFast_WatchFailuresDoNotOpenTheBreaker(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFailFast, time.Hour))
	f.flaky.down.Store(true)
	for range 30 {
		if _, err := f.s.Watch(t.Context(), newID()); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("Watch while down = %v, want EUNAVAILABLE", err)
		}
	}
	if f.s.BreakerState() != "closed" {
		t.Fatalf("breaker = %s after 30 failed subscriptions, want closed", f.s.BreakerState())
	}
	f.flaky.down.Store(false)
	if _, err := f.s.Save(t.Context(), doc(newID(), nil), buildstatus.SaveOptions{}); err != nil {
		t.Fatalf("Save after failed subscriptions: %v", err)
	}
}
