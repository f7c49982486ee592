package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/buildinfo"
)

func TestObserveOp_NotFoundIsNotAnError(t *testing.T) {
	m := New()
	m.ObserveOp("buildstatus", "get", "redis", time.Millisecond, nil)
	m.ObserveOp("buildstatus", "get", "redis", time.Millisecond, redstate.Errorf(redstate.ENOTFOUND, "gone"))
	m.ObserveOp("buildstatus", "get", "redis", time.Millisecond, redstate.Errorf(redstate.EUNAVAILABLE, "down"))
	m.ObserveOp("buildstatus", "get", "redis", time.Millisecond, errors.New("boom"))

	if got := testutil.CollectAndCount(m.opDuration); got != 1 {
		t.Fatalf("duration series = %d, want 1", got)
	}
	if got := testutil.ToFloat64(m.opErrors.WithLabelValues("buildstatus", "get", "redis", redstate.EUNAVAILABLE)); got != 1 {
		t.Errorf("unavailable errors = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.opErrors.WithLabelValues("buildstatus", "get", "redis", redstate.EINTERNAL)); got != 1 {
		t.Errorf("internal errors = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(m.opErrors); got != 2 {
		t.Errorf("error series = %d, want 2 (not_found must not be counted)", got)
	}
}

func TestBreakerAndFallbackMetrics(t *testing.T) {
	m := New()
	m.SetBreakerState("buildstatus", BreakerClosed)
	m.BreakerTransition("buildstatus", BreakerOpen)
	if got := testutil.ToFloat64(m.breaker.WithLabelValues("buildstatus")); got != 2 {
		t.Errorf("breaker gauge = %v, want 2", got)
	}
	m.BreakerTransition("buildstatus", BreakerHalfOpen)
	if got := testutil.ToFloat64(m.breaker.WithLabelValues("buildstatus")); got != 1 {
		t.Errorf("breaker gauge = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.transitions.WithLabelValues("buildstatus", BreakerOpen)); got != 1 {
		t.Errorf("transitions to open = %v, want 1", got)
	}
	m.SetPending("buildstatus", 3)
	if got := testutil.ToFloat64(m.pending.WithLabelValues("buildstatus")); got != 3 {
		t.Errorf("pending = %v, want 3", got)
	}
	m.AddWriteBack("buildstatus", WriteBackWritten, 2)
	m.AddWriteBack("buildstatus", WriteBackWritten, 1)
	if got := testutil.ToFloat64(m.writeBack.WithLabelValues("buildstatus", WriteBackWritten)); got != 3 {
		t.Errorf("written = %v, want 3", got)
	}
	// The registry gathers without conflicts (Go and process collectors included).
	if _, err := m.Registry().Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestNilMetricsIsNoOp(t *testing.T) {
	var m *Metrics
	m.ObserveOp("b", "op", "x", time.Second, nil)
	m.SetBreakerState("b", BreakerOpen)
	m.BreakerTransition("b", BreakerOpen)
	m.SetPending("b", 1)
	m.AddWriteBack("b", WriteBackFailed, 1)
}

// TestBuildInfo_ExportedWithTheBuildsLabels: the registry exports redstate_build_info 1 with the
// version, revision and Go version of buildinfo.Read.
func TestBuildInfo_ExportedWithTheBuildsLabels(t *testing.T) {
	m := New()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	info := buildinfo.Read()
	for _, f := range families {
		if f.GetName() != "redstate_build_info" {
			continue
		}
		got := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if f.GetMetric()[0].GetGauge().GetValue() != 1 || got["version"] != info.Version || got["revision"] != info.Revision || got["goversion"] != info.GoVersion {
			t.Fatalf("redstate_build_info %v = %v, want the labels of %+v and 1", got, f.GetMetric()[0].GetGauge().GetValue(), info)
		}
		return
	}
	t.Fatal("redstate_build_info is not exported")
}
