package redisconn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
)

// redirectedWrites are the three ways a write reaches a cluster node: a command, a pipeline
// and a transaction. Each writes key = val with client and returns the error.
var redirectedWrites = []struct {
	name  string
	write func(ctx context.Context, client *redis.ClusterClient, key, val string) error
}{
	{"SET", func(ctx context.Context, client *redis.ClusterClient, key, val string) error {
		return client.Set(ctx, key, val, 0).Err()
	}},
	{"pipeline", func(ctx context.Context, client *redis.ClusterClient, key, val string) error {
		_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, key, val, 0); return nil })
		return err
	}},
	{"transaction", func(ctx context.Context, client *redis.ClusterClient, key, val string) error {
		_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, key, val, 0); return nil })
		return err
	}},
}

// errorCount returns how many replies srv answered with the error code (INFO errorstats).
func errorCount(t *testing.T, srv *redistest.Server, code string) int {
	t.Helper()
	info, err := srv.Client(t).Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+code+":count="); ok {
			n, _ := strconv.Atoi(rest)
			return n
		}
	}
	return 0
}

// TestDurabilityCluster_FollowsMovedAfterFailover: clients that still route a shard to its
// old master after a manual failover (CLUSTER FAILOVER on the replica) get MOVED, follow it,
// and their write succeeds durably on the new master: the MOVED reply and the WAIT that went
// to the demoted master are not reported as a durability failure.
func TestDurabilityCluster_FollowsMovedAfterFailover(t *testing.T) {
	c := redistest.StartClusterHA(t, 3)
	ss := shards(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clients := make([]*redis.ClusterClient, len(redirectedWrites))
	for i := range clients {
		clients[i] = durableCluster(t, c, 2*time.Second)
		if err := clients[i].Set(ctx, ss[0].key("warm"), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	old := ss[0].master
	if err := ss[0].replica.Client(t).Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	c.WaitShardFailover(t, 0, old.Addr, 30*time.Second)
	c.WaitHealthy(t, 30*time.Second)
	moved := errorCount(t, old, "MOVED")
	for i, w := range redirectedWrites {
		key := ss[0].key("after-failover-" + w.name)
		if err := w.write(ctx, clients[i], key, w.name); err != nil {
			t.Fatalf("%s after failover: %v", w.name, err)
		}
		// The old master is now the shard's replica.
		if got, err := readOnlyClient(t, old).Get(ctx, key).Result(); err != nil || got != w.name {
			t.Fatalf("%s after failover: new replica has %q, %v", w.name, got, err)
		}
	}
	if n := errorCount(t, old, "MOVED") - moved; n < len(redirectedWrites) {
		t.Fatalf("the demoted master answered MOVED %d times, want at least %d (one per stale client)", n, len(redirectedWrites))
	}
}

// TestDurabilityCluster_FollowsAsk: while a slot migrates, a write of a key its source does not
// hold gets ASK; the command, the pipeline and the transaction (ASKING before MULTI) go to
// the importing node and wait there for its replica.
func TestDurabilityCluster_FollowsAsk(t *testing.T) {
	c := redistest.StartClusterHA(t, 3)
	ss := shards(t, c)
	src, dst := ss[0], ss[1]
	ctx := ctxT(t)
	client := durableCluster(t, c, 2*time.Second)
	if err := client.Set(ctx, src.key("warm"), "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	id := func(s *redistest.Server) string {
		v, err := s.Client(t).ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	slot, err := src.master.Client(t).ClusterKeySlot(ctx, src.key("x")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.master.Client(t).Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", id(src.master)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := src.master.Client(t).Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", id(dst.master)).Err(); err != nil {
		t.Fatal(err)
	}
	asks := errorCount(t, src.master, "ASK")
	for _, w := range redirectedWrites {
		key := src.key("ask-" + w.name)
		before := waitCalls(t, dst.master)
		if err := w.write(ctx, client, key, w.name); err != nil {
			t.Fatalf("%s during migration: %v", w.name, err)
		}
		if n := waitCalls(t, dst.master) - before; n != 1 {
			t.Fatalf("%s during migration: %d WAITs on the importing node, want 1", w.name, n)
		}
		// The replica does not serve the slot (its master does not own it): look the key up.
		if keys, err := readOnlyClient(t, dst.replica).Keys(ctx, key).Result(); err != nil || len(keys) != 1 {
			t.Fatalf("%s during migration: the importing node's replica has %v, %v", w.name, keys, err)
		}
	}
	if n := errorCount(t, src.master, "ASK") - asks; n < len(redirectedWrites) {
		t.Fatalf("the migrating node answered ASK %d times, want at least %d", n, len(redirectedWrites))
	}
}
