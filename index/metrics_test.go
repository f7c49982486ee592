package index

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redstate/redstate/metrics"
)

// TestRegisterSourceProgress: each given func is one series labelled by the source; a
// nil func registers nothing.
func TestRegisterSourceProgress(t *testing.T) {
	m := metrics.New()
	RegisterSourceProgress(m, "mysql", SourceProgress{
		Events:           func() float64 { return 42 },
		PendingEvents:    func() float64 { return 3 },
		PositionFile:     func() float64 { return 7 },
		PositionOffset:   func() float64 { return 1234 },
		SnapshotEstimate: func() float64 { return 20000 },
	})
	RegisterSourceProgress(m, "postgres", SourceProgress{Events: func() float64 { return 5 }})
	want := `
# HELP redstate_index_source_events_total Row changes applied from the source's stream.
# TYPE redstate_index_source_events_total counter
redstate_index_source_events_total{source="mysql"} 42
redstate_index_source_events_total{source="postgres"} 5
# HELP redstate_index_source_pending_events Row changes read from the source and not yet applied.
# TYPE redstate_index_source_pending_events gauge
redstate_index_source_pending_events{source="mysql"} 3
# HELP redstate_index_source_position_bytes Byte offset of the last applied binary log position in its file.
# TYPE redstate_index_source_position_bytes gauge
redstate_index_source_position_bytes{source="mysql"} 1234
# HELP redstate_index_source_position_file File number of the last applied binary log position.
# TYPE redstate_index_source_position_file gauge
redstate_index_source_position_file{source="mysql"} 7
# HELP redstate_index_backfill_rows_estimate Expected rows of the source's snapshot (information_schema estimate).
# TYPE redstate_index_backfill_rows_estimate gauge
redstate_index_backfill_rows_estimate{source="mysql"} 20000
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"redstate_index_source_events_total", "redstate_index_source_pending_events", "redstate_index_source_position_bytes",
		"redstate_index_source_position_file", "redstate_index_backfill_rows_estimate"); err != nil {
		t.Fatal(err)
	}
	RegisterSourceProgress(nil, "mysql", SourceProgress{}) // no registry: nothing
}
