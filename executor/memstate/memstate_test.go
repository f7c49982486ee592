package memstate_test

import (
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/memstate"
	"github.com/redstate/redstate/executor/statetest"
)

func TestCheckpoints_Conformance(t *testing.T) {
	statetest.RunCheckpointSuite(t, func(t *testing.T, ttl time.Duration) executor.CheckpointStore {
		return memstate.NewCheckpoints(memstate.Options{TTL: ttl})
	}, statetest.Features{})
}

func TestProjections_Conformance(t *testing.T) {
	statetest.RunProjectionSuite(t, func(t *testing.T, ttl time.Duration) executor.ProjectionStore {
		return memstate.NewProjections(memstate.Options{TTL: ttl})
	}, statetest.Features{})
}

func TestTenantIndex_Conformance(t *testing.T) {
	statetest.RunTenantIndexSuite(t, func(t *testing.T, ttl time.Duration) executor.TenantIndex {
		return memstate.NewTenantIndex(memstate.Options{TTL: ttl})
	}, statetest.Features{})
}

func TestLocks_Conformance(t *testing.T) {
	statetest.RunLockSuite(t, func(t *testing.T) executor.TenantLocks {
		return memstate.NewLocks(memstate.Options{})
	}, statetest.Features{})
}
