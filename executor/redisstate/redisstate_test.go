package redisstate_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/executor/statetest"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// namespaces makes every store's namespace unique within the test binary.
var namespaces atomic.Int64

func opts(ttl time.Duration) redisstate.Options {
	return redisstate.Options{Keys: executor.MustKeys(redstate.Prefix("", fmt.Sprintf("t%d-executor", namespaces.Add(1)))), TTL: ttl}
}

// must returns v, failing the test (from its own goroutine) if err is set.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestConformance(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		t.Run("Checkpoints", func(t *testing.T) {
			statetest.RunCheckpointSuite(t, func(t *testing.T, ttl time.Duration) executor.CheckpointStore {
				return must(redisstate.NewCheckpoints(client, opts(ttl)))(t)
			}, statetest.Features{})
		})
		t.Run("CheckpointsUncached", func(t *testing.T) {
			statetest.RunCheckpointSuite(t, func(t *testing.T, ttl time.Duration) executor.CheckpointStore {
				o := opts(ttl)
				o.CacheSize = -1
				return must(redisstate.NewCheckpoints(client, o))(t)
			}, statetest.Features{})
		})
		t.Run("Projections", func(t *testing.T) {
			statetest.RunProjectionSuite(t, func(t *testing.T, ttl time.Duration) executor.ProjectionStore {
				return must(redisstate.NewProjections(client, opts(ttl)))(t)
			}, statetest.Features{})
		})
		t.Run("TenantIndex", func(t *testing.T) {
			statetest.RunTenantIndexSuite(t, func(t *testing.T, ttl time.Duration) executor.TenantIndex {
				return must(redisstate.NewTenantIndex(client, opts(ttl)))(t)
			}, statetest.Features{})
		})
		t.Run("Locks", func(t *testing.T) {
			statetest.RunLockSuite(t, func(t *testing.T) executor.TenantLocks {
				return must(redisstate.NewLocks(client, opts(0)))(t)
			}, statetest.Features{})
		})
		t.Run("DirectLocks", func(t *testing.T) {
			statetest.RunLockSuite(t, func(t *testing.T) executor.TenantLocks {
				o := opts(0)
				o.DirectLocks = true
				return must(redisstate.NewLocks(client, o))(t)
			}, statetest.Features{})
		})
	})
}
