package redisqueue_test

import (
	"testing"
	"time"

	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// TestBrokerSuite_Durable: the broker keeps every promise of its suites (dequeue's dedicated
// connection, blocking moves and CLIENT UNBLOCK included) when each write waits for a replica
// (redis.durability.wait-replicas 1).
func TestBrokerSuite_Durable(t *testing.T) {
	master := redistest.StartStandalone(t)
	redistest.StartReplica(t, master)
	o := redisconn.DefaultOptions()
	o.URL = master.URL
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 5 * time.Second}
	client, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	t.Run("Broker", func(t *testing.T) { queuetest.RunBrokerSuite(t, backend(client), queuetest.Features{}) })
	t.Run("Worker", func(t *testing.T) { queuetest.RunWorkerSuite(t, backend(client), queuetest.Features{}) })
}
