package resilientstore

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

// fixture is a resilient store over a flaky memory "Redis" (raw is its unwrapped store, the
// view of another process writing to Redis directly).
type fixture struct {
	s     *Store
	flaky *flaky
	raw   *memstore.Store
	m     *metrics.Metrics
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig(policy string, writeBack time.Duration) resilience.Options {
	return resilience.Options{
		Policy: policy,
		BreakerConfig: resilience.BreakerConfig{
			FailureRateThreshold:    50,
			SlidingWindowSize:       10,
			WaitDurationInOpenState: 30 * time.Millisecond,
		},
		WriteBackInterval: writeBack,
	}
}

func newFixture(t *testing.T, cfg resilience.Options) *fixture {
	t.Helper()
	raw := memstore.New(memstore.Options{TTL: time.Hour})
	fb := memstore.New(memstore.Options{TTL: time.Hour})
	f := &fixture{flaky: &flaky{Store: raw}, raw: raw, m: metrics.New()}
	s, err := New(f.flaky, fb, cfg, f.m, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	t.Cleanup(func() {
		_ = s.Close()
		_ = fb.Close()
		_ = raw.Close()
	})
	return f
}

// doc returns the seed's sample with a fresh id and the given updatedAt (nil keeps null).
func doc(id string, updated *time.Time) *buildstatus.PublishResponse {
	d := storetest.SampleDoc(id, "proj-resilient")
	d.UpdatedAt = nil
	if updated != nil {
		d.UpdatedAt = buildstatus.NewLocalDateTime(*updated)
	}
	return d
}

func newID() string { return uuid.NewString() }

// eventually polls cond every few milliseconds until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// counter returns a labelled series' value from m's registry (0 if absent).
func counter(t *testing.T, m *metrics.Metrics, name, label, value string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if mt.GetGauge() != nil {
						return mt.GetGauge().GetValue()
					}
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
