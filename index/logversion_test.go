package index_test

import (
	"encoding/json"
	"testing"

	"github.com/redstate/redstate/index"
)

// TestParseLogEvent_OffsetOrdersTimeOnlyEvents: Canal messages (and Debezium events without a
// source position) are versioned by offset and row, whatever their es and batch id; a Debezium
// event with a binlog position keeps it.
func TestParseLogEvent_OffsetOrdersTimeOnlyEvents(t *testing.T) {
	msg := func(es string, id string) json.RawMessage {
		return json.RawMessage(`{"data":[{"id":"1"},{"id":"2"}],"database":"db1","table":"table1","type":"UPDATE","es":` + es + `,"id":` + id + `,"isDdl":false}`)
	}
	var versions []index.Version
	for i, m := range []json.RawMessage{msg("1700000001000", "9"), msg("1700000001000", "9"), msg("1700000000000", "10"), msg("1700000001000", "1")} {
		changes, _, err := index.ParseLogEvent(index.FormatCanal, m, uint64(100+i))
		if err != nil || len(changes) != 2 {
			t.Fatalf("message %d: %v %v", i, changes, err)
		}
		for r, ch := range changes {
			if want := index.LogVersion(uint64(100+i), uint32(r)); ch.Version != want {
				t.Errorf("message %d row %d: version %s, want %s", i, r, ch.Version, want)
			}
			versions = append(versions, ch.Version)
		}
	}
	for i := 1; i < len(versions); i++ {
		if versions[i] <= versions[i-1] {
			t.Errorf("version %d (%s) is not after %s", i, versions[i], versions[i-1])
		}
	}
	dbz := json.RawMessage(`{"after":{"id":1},"source":{"db":"db1","table":"table1","file":"mysql-bin.000002","pos":40,"row":1},"op":"u"}`)
	changes, _, err := index.ParseLogEvent(index.FormatDebezium, dbz, 5)
	if err != nil || changes[0].Version != index.BinlogVersion(2, 40, 1) {
		t.Errorf("debezium with a position: %v %v", changes, err)
	}
	timeOnly := json.RawMessage(`{"after":{"id":1},"source":{"db":"db1","table":"table1","ts_ms":1700000000000},"op":"u"}`)
	changes, _, err = index.ParseLogEvent(index.FormatDebezium, timeOnly, 5)
	if err != nil || changes[0].Version != index.LogVersion(5, 0) {
		t.Errorf("debezium with only a time: %v %v", changes, err)
	}
}
