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
	runDurableSuites(t, o)
}

// TestBrokerSuite_DurableCluster: the same on a cluster of three masters with one replica
// each (every write waits for its shard's replica).
func TestBrokerSuite_DurableCluster(t *testing.T) {
	c := redistest.StartClusterHA(t, 3)
	o := redisconn.DefaultOptions()
	o.ClusterAddrs = c.Addrs
	runDurableSuites(t, o)
}

// runDurableSuites runs the broker and worker suites on a client of o whose writes wait for
// one replica.
func runDurableSuites(t *testing.T, o redisconn.Options) {
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 5 * time.Second}
	client, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	t.Run("Broker", func(t *testing.T) { queuetest.RunBrokerSuite(t, backend(client), queuetest.Features{}) })
	t.Run("Worker", func(t *testing.T) { queuetest.RunWorkerSuite(t, backend(client), queuetest.Features{}) })
}
