// Package reporttest is the conformance suite of the report block: every record store (memrecords,
// redisrecords, sqlrecords) runs RunRecordStoreSuite, and the report flow's properties (the report
// flow's correctness properties 4 to 7, docs/report.md) and worker tests run on a broker and a
// store with RunProperties and RunWorkerSuite, so that all backends keep the contracts documented
// on report.RecordStore. Subtests run in parallel on random record ids (and queue names), so one
// backend instance may serve them all.
package reporttest

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

// NewRecordStore returns a RecordStore under test (the same instance is fine: the suite uses
// random ids) with the default retention.
type NewRecordStore func(t *testing.T) report.RecordStore

// LegacyMessage is the legacy application's example message, as a legacy producer LPUSHes it.
const LegacyMessage = `{"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`

// longLease is the lease of consumers that must not expire during a test.
const longLease = time.Hour

// waitFor bounds every poll for a condition.
const waitFor = 10 * time.Second

// quiet is a logger that discards everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !redstate.IsCode(err, code) {
		t.Fatalf("err = %v, want code %q", err, code)
	}
}

// recordIDOf returns the record id of a report job, 0 if it has none.
func recordIDOf(m queue.Message) int64 {
	id, _ := report.RecordIDOf(m)
	return id
}

// eventually polls cond every 10ms until it holds or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// errInjected is the failure of the fault-injecting wrappers.
var errInjected = redstate.Wrap(redstate.EUNAVAILABLE, errors.New("injected failure"), "injected")
