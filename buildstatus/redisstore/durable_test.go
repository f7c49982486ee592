package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// durableClient returns a redisconn client of master whose writes wait for one replica.
func durableClient(t testing.TB, master *redistest.Server, replicas int, timeout time.Duration) redis.UniversalClient {
	t.Helper()
	o := redisconn.DefaultOptions()
	o.URL = master.URL
	o.Durability = redisconn.Durability{WaitReplicas: replicas, WaitTimeout: timeout}
	client, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// TestStore_DurableConformance: the store keeps every promise of its suite when each write
// waits for a replica (redis.durability.wait-replicas 1).
func TestStore_DurableConformance(t *testing.T) {
	master := redistest.StartStandalone(t)
	redistest.StartReplica(t, master)
	storetest.RunStoreSuite(t, newStoreOn(durableClient(t, master, 1, 5*time.Second)), storetest.Features{})
}

// TestStore_DurableClusterConformance: the same on a cluster of three masters with one
// replica each (every write waits for its shard's replica).
func TestStore_DurableClusterConformance(t *testing.T) {
	c := redistest.StartClusterHA(t, 3)
	o := redisconn.DefaultOptions()
	o.ClusterAddrs = c.Addrs
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 5 * time.Second}
	client, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	storetest.RunStoreSuite(t, newStoreOn(client), storetest.Features{})
}

// TestStore_DurableSaveWithoutReplicaIsUnavailable: with the replica gone a save fails with
// EUNAVAILABLE (the block's retry and fallback handle it as an outage).
func TestStore_DurableSaveWithoutReplicaIsUnavailable(t *testing.T) {
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	s := mustNew(t, durableClient(t, master, 1, 100*time.Millisecond), time.Hour)
	ctx := context.Background()
	if _, err := s.Save(ctx, storetest.SampleDoc("", ""), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	replica.Kill(t)
	_, err := s.Save(ctx, storetest.SampleDoc("", ""), buildstatus.SaveOptions{})
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("save without replica: err = %v, want EUNAVAILABLE", err)
	}
}

// BenchmarkSave_Durability measures a save on a master with one local replica, with writes
// waiting for it (wait-replicas 1) and without.
func BenchmarkSave_Durability(b *testing.B) {
	master := redistest.StartStandalone(b)
	redistest.StartReplica(b, master)
	benchmarkSaves(b, func(o *redisconn.Options) { o.URL = master.URL })
}

// BenchmarkSave_DurabilityCluster is BenchmarkSave_Durability on a local cluster of three
// masters with one replica each.
func BenchmarkSave_DurabilityCluster(b *testing.B) {
	c := redistest.StartClusterHA(b, 3)
	benchmarkSaves(b, func(o *redisconn.Options) { o.ClusterAddrs = c.Addrs })
}

// benchmarkSaves measures saves on the topology topology sets, with wait-replicas 0 and 1.
func benchmarkSaves(b *testing.B, topology func(*redisconn.Options)) {
	for _, replicas := range []int{0, 1} {
		b.Run(fmt.Sprintf("wait-replicas=%d", replicas), func(b *testing.B) {
			o := redisconn.DefaultOptions()
			topology(&o)
			o.Durability = redisconn.Durability{WaitReplicas: replicas, WaitTimeout: time.Second}
			client, err := redisconn.New(o)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = client.Close() }()
			s, err := redisstore.New(client, redisstore.Options{Keys: buildstatus.NewKeys(redstate.Prefix(fmt.Sprintf("bench%d-", replicas), "")), TTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			ctx := context.Background()
			doc := storetest.SampleDoc("", "")
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Save(ctx, doc, buildstatus.SaveOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
