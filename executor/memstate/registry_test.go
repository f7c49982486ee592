package memstate_test

import (
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/memstate"
	"github.com/redstate/redstate/executor/statetest"
)

func TestRegistry_Conformance(t *testing.T) {
	statetest.RunRegistrySuite(t, func(t *testing.T, ttl time.Duration) executor.TaskRegistry {
		return memstate.NewRegistry(memstate.Options{TTL: ttl})
	}, statetest.Features{})
}
