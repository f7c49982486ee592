package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/queue/redisqueue"
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

// TestDequeue_NotDurableStillDelivers: with redis.durability.wait-replicas on and the replica
// stalled, a dequeue's move happens on the master but WAIT times out. The jobs it moved sit in
// the consumer's processing list, which nothing recovers while the consumer keeps its lease:
// the dequeue must deliver them (a failover that loses the move only makes them pending again,
// a duplicate delivery at-least-once allows), on the fast path and on the blocking one.
func TestDequeue_NotDurableStillDelivers(t *testing.T) {
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	o := redisconn.DefaultOptions()
	o.URL = master.URL
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond}
	client, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	b, err := redisqueue.New(client, redisqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Heartbeat(ctx, "q", "c1", time.Minute); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Enqueue(ctx, "q", queue.NewMessage(time.Now(), nil)); err != nil {
			t.Fatal(err)
		}
	}
	replica.Pause(t)
	t.Cleanup(func() { replica.Resume(t) })

	ds, err := b.DequeueBatch(ctx, "q", "c1", 2, time.Second)
	if err != nil || len(ds) != 2 {
		t.Fatalf("fast path: DequeueBatch = %d jobs, %v; want the 2 jobs it moved", len(ds), err)
	}

	plain := master.Client(t) // enqueues while the dequeue blocks, without WAIT
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = plain.LPush(ctx, "q", `{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`).Err()
	}()
	ds, err = b.DequeueBatch(ctx, "q", "c1", 1, 5*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("blocking path: DequeueBatch = %d jobs, %v; want the job it moved", len(ds), err)
	}
}
