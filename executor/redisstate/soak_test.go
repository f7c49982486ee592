//go:build soak

package redisstate_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/executor/statetest"
	"github.com/redstate/redstate/redistest"
)

// TestLockSafety_Soak is the lock-safety proof at full length: 16 goroutines, each with
// its own lock manager, contend for 20 tenants for 30 s on standalone and Cluster
// (go test -tags soak -run Soak ./executor/redisstate/).
func TestLockSafety_Soak(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		statetest.RunLockSafety(t, must(redisstate.NewLocks(client, opts(0)))(t), 16, 20, 30*time.Second)
	})
}
