// Package statetest is the conformance suite of the executor's state layer: every backend
// (memstate, redisstate on standalone Redis and on a 3-master Cluster) runs the Run*Suite
// functions from its tests, so all keep the contracts documented in package executor.
//
// Requirements on a backend under test: each constructor call returns an EMPTY store isolated
// from every other one it returned (a unique namespace, never FLUSHALL), because subtests run
// in parallel; TTLs of a few hundred milliseconds must be honoured to within about a second
// (the suite polls with a deadline, never sleeps a fixed time for a condition).
package statetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// Features declares optional guarantees. Nothing is optional yet; the struct keeps the Run*
// signatures stable.
type Features struct{}

// waitFor bounds every poll for a condition.
const waitFor = 5 * time.Second

// shortTTL is the TTL the expiry tests use.
const shortTTL = 300 * time.Millisecond

// namedTest is one subtest.
type namedTest struct {
	name string
	run  func(t *testing.T)
}

// runAll runs tests as parallel subtests of t.
func runAll(t *testing.T, tests []namedTest) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

var ids atomic.Int64

// newID returns an id unique in the test binary, e.g. "task-17".
func newID(kind string) string { return fmt.Sprintf("%s-%d", kind, ids.Add(1)) }

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, err error, code, what string) {
	t.Helper()
	if !redstate.IsCode(err, code) {
		t.Fatalf("%s: got error %v, want code %s", what, err, code)
	}
}

// must fails t on err.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eventually polls cond every 20ms until it holds or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitFor, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// badIDs are ids every store must reject with EINVALID.
var badIDs = []string{"", "has space", "brace{x}", "star*", "new\nline", string(make([]byte, executor.MaxIDLength+1))}
