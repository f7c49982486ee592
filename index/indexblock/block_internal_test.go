package indexblock

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/mysqlsource"
)

// fixedSource is an index.Source with a given status and health.
type fixedSource struct {
	status index.SourceStatus
	health index.SourceHealth
}

func (f fixedSource) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (f fixedSource) Status() index.SourceStatus    { return f.status }
func (f fixedSource) Health() index.SourceHealth    { return f.health }

// TestBlock_HealthThroughTheSourceContract: the block's health is built from the sources'
// common status and health, in the sources' order, the push source left out, a degraded
// source's reason after the list; Pulled lists the pulled sources in order.
func TestBlock_HealthThroughTheSourceContract(t *testing.T) {
	spec := index.TableSpec{DB: "db1", Table: "t", Key: "id", Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "a", Type: index.TypeInt}},
		Dimensions: [][]index.Part{{{Code: "a", Column: "a"}}}}
	ix, err := index.New(memindex.New(), []index.TableSpec{spec}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ok := component.StateOK
	ib := &Block{indexer: ix, backend: component.BackendMemory, sources: []index.Source{
		index.NewPushSource(),
		fixedSource{index.SourceStatus{Name: "postgres", Kind: index.SourcePulled, Events: 4, Copied: 10,
			Lag: index.SourceLag{Seconds: 1.5, Behind: 300, Unit: index.LagBytes}}, index.SourceHealth{State: ok}},
		fixedSource{index.SourceStatus{Name: "mysql", Kind: index.SourcePulled, Position: "binlog.000002:4", Copied: 7,
			Lag: index.SourceLag{Behind: 20, Unit: index.LagBytes}, Detail: &mysqlsource.Detail{PendingEvents: 2, SnapshotEstimate: 8, SnapshotPercent: 100, Streaming: true}},
			index.SourceHealth{State: ok, Reason: "reading the binlog (fence 3)"}},
		fixedSource{index.SourceStatus{Name: "streams", Kind: index.SourcePulled}, index.SourceHealth{State: ok}},
		fixedSource{index.SourceStatus{Name: "kafka", Kind: index.SourcePulled, Lag: index.SourceLag{Behind: 5, Unit: index.LagRecords},
			Detail: &kafkasource.Detail{Group: kafkasource.GroupLag{Group: "g", Members: 1}, Timing: kafkasource.GroupTiming{SessionTimeout: 7 * time.Second}}},
			index.SourceHealth{State: component.StateDegraded, Reason: "the Kafka source is failing (fetch t/0: down), retrying; nothing is committed past what is applied"}},
	}}
	h := ib.Health(context.Background())
	wantDetail := "1 tables, source postgres, source mysql (reading the binlog (fence 3)), source streams, source kafka; " +
		"the Kafka source is failing (fetch t/0: down), retrying; nothing is committed past what is applied"
	if h.State != component.StateDegraded || h.Detail != wantDetail {
		t.Fatalf("health = %s %q, want degraded %q", h.State, h.Detail, wantDetail)
	}
	if p := ib.Pulled(); len(p) != 4 || p[0].Status().Name != "postgres" {
		t.Fatalf("pulled = %v, want the four pulled sources in order", p)
	}
}
