package index_test

import (
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
)

// TestPushSource_StatusIsItsCounters: the push source sums the batches' results, has no
// position or lag, is degraded from a refused batch until one is applied again, and a nil one
// counts nothing.
func TestPushSource_StatusIsItsCounters(t *testing.T) {
	p := index.NewPushSource()
	p.Record(index.Result{Applied: 3, Stale: 1, Skipped: 2, Failed: 1}, nil)
	p.Record(index.Result{Applied: 2}, nil)
	p.Record(index.Result{}, redstate.Errorf(redstate.EUNAVAILABLE, "redis down"))
	st := p.Status()
	want := index.PushDetail{Batches: 2, Refused: 1, Applied: 5, Stale: 1, Skipped: 2, Failed: 1}
	if st.Name != "http" || st.Kind != index.SourcePushed || st.Events != 5 || st.Lag != (index.SourceLag{}) || st.Position != "" || st.Detail != want {
		t.Fatalf("status = %+v, want %+v", st, want)
	}
	if h := p.Health(); h.State != component.StateDegraded || h.Reason != "the store refused the last pushed batch (redis down); producers resend it" {
		t.Fatalf("health after a refusal = %+v", h)
	}
	p.Record(index.Result{Applied: 1}, nil)
	if h := p.Health(); h != (index.SourceHealth{State: component.StateOK}) {
		t.Fatalf("health after an applied batch = %+v", h)
	}
	var none *index.PushSource
	none.Record(index.Result{Applied: 1}, nil)
}
