// Package storetest is the conformance suite of buildstatus.Store: every backend (memory, Redis
// standalone, Redis Cluster, the resilience wrapper) runs RunStoreSuite from its tests, so they
// all keep the contract documented on buildstatus.Store.
//
// Requirements on a backend under test:
//
//   - NewStore returns an empty store isolated from every other store it returned (use a unique
//     key prefix, never FLUSHALL): subtests run in parallel.
//   - Watch returns only once the subscription is established (for Redis Pub/Sub: after the
//     SUBSCRIBE is confirmed), so that a change made right after Watch returns is delivered.
//   - TTLs of one second must be honoured to within about a second; the suite waits for expiry
//     by polling with a deadline, never by fixed sleeps, and takes a few seconds in total.
package storetest

import (
	"testing"
	"time"

	"github.com/redstate/redstate/buildstatus"
)

// Features declares what a backend guarantees beyond the contract. Currently nothing is
// optional; the struct exists so that later optional guarantees can be declared without
// changing RunStoreSuite's signature.
type Features struct{}

// NewStore returns an EMPTY, isolated Store whose documents expire after ttl. The suite calls it
// once per subtest and runs subtests in parallel (t.Parallel), so backends isolate by unique key
// prefix, not by FLUSHALL. It should register any cleanup with t.Cleanup.
type NewStore func(t *testing.T, ttl time.Duration) buildstatus.Store

// defaultTTL is the TTL of stores whose subtests do not exercise expiry.
const defaultTTL = time.Hour

// waitFor bounds every poll for a condition (expiry, event delivery).
const waitFor = 5 * time.Second

// suite carries the backend under test into the subtests.
type suite struct {
	newStore NewStore
	features Features
}

// store returns a fresh store with the default TTL.
func (s suite) store(t *testing.T) buildstatus.Store {
	t.Helper()
	return s.newStore(t, defaultTTL)
}

// RunStoreSuite runs every conformance test against the backend that newStore creates.
func RunStoreSuite(t *testing.T, newStore NewStore, f Features) {
	s := suite{newStore: newStore, features: f}
	groups := []struct {
		name  string
		tests []namedTest
	}{
		{"CRUD", s.crudTests()},
		{"Conditional", s.conditionalTests()},
		{"TTL", s.ttlTests()},
		{"GetMany", s.getManyTests()},
		{"List", s.listTests()},
		{"ListProject", s.listProjectTests()},
		{"UpdatePlatform", s.updatePlatformTests()},
		{"PatchPlatform", s.patchTests()},
		{"Watch", s.watchTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t)
				})
			}
		})
	}
}

// namedTest is one subtest.
type namedTest struct {
	name string
	run  func(t *testing.T)
}
