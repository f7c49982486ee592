package history_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// namespaces makes every opened backend a namespace of its own on the shared servers.
var namespaces atomic.Int64

// redisBackend opens Redis stores under a fresh namespace of client.
func redisBackend(client redis.UniversalClient) historytest.Backend {
	return func(t *testing.T, now func() time.Time) func() history.Store {
		keys := history.NewKeys(redstate.Prefix(fmt.Sprintf("t%d-", namespaces.Add(1)), ""))
		return func() history.Store { return history.NewRedisStore(client, keys, now) }
	}
}

func TestRedisStore_Conformance(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		historytest.Run(t, redisBackend(client))
	})
}
