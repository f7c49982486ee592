package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
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

// TestIndexSourceStatus_ThroughTheContract: GET /v1/index/status is built from the pulled
// sources' common status: in their order, lag in the field of its unit, the binlog and Kafka
// detail in their fields.
func TestIndexSourceStatus_ThroughTheContract(t *testing.T) {
	ok := component.StateOK
	pulled := []index.Source{
		fixedSource{index.SourceStatus{Name: "postgres", Kind: index.SourcePulled, Events: 4, Copied: 10,
			Lag: index.SourceLag{Seconds: 1.5, Behind: 300, Unit: index.LagBytes}}, index.SourceHealth{State: ok}},
		fixedSource{index.SourceStatus{Name: "mysql", Kind: index.SourcePulled, Position: "binlog.000002:4", Copied: 7,
			Lag: index.SourceLag{Behind: 20, Unit: index.LagBytes}, Detail: &mysqlsource.Detail{PendingEvents: 2, SnapshotEstimate: 8, SnapshotPercent: 100, Streaming: true}},
			index.SourceHealth{State: ok, Reason: "reading the binlog (fence 3)"}},
		fixedSource{index.SourceStatus{Name: "streams", Kind: index.SourcePulled}, index.SourceHealth{State: ok}},
		fixedSource{index.SourceStatus{Name: "kafka", Kind: index.SourcePulled, Lag: index.SourceLag{Behind: 5, Unit: index.LagRecords},
			Detail: &kafkasource.Detail{Group: kafkasource.GroupLag{Group: "g", Members: 1}, Timing: kafkasource.GroupTiming{SessionTimeout: 7 * time.Second}}},
			index.SourceHealth{State: component.StateDegraded, Reason: "the Kafka source is failing (fetch t/0: down), retrying; nothing is committed past what is applied"}},
	}
	got, err := json.Marshal(indexSourceStatus(pulled))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"postgres","backfilledRows":10,"lagBytes":300,"lagSeconds":1.5,"lagRecords":0,"events":4},` +
		`{"name":"mysql","backfilledRows":7,"lagBytes":20,"lagSeconds":0,"lagRecords":0,"events":0,"position":"binlog.000002:4","pendingEvents":2,"snapshotRowsEstimate":8,"snapshotPercent":100,"streaming":true},` +
		`{"name":"streams","backfilledRows":0,"lagBytes":0,"lagSeconds":0,"lagRecords":0,"events":0},` +
		`{"name":"kafka","backfilledRows":0,"lagBytes":0,"lagSeconds":0,"lagRecords":5,"kafkaGroup":{"group":"g","members":1,"sessionTimeoutSeconds":7,"heartbeatIntervalSeconds":0,"rebalanceTimeoutSeconds":0,"lagIntervalSeconds":0,"partitions":[]},"events":0}]`
	if string(got) != want {
		t.Fatalf("sources =\n%s\nwant\n%s", got, want)
	}
}
