package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// durableCluster returns a redisconn client of c whose writes wait for one replica.
func durableCluster(t *testing.T, c *redistest.Cluster, timeout time.Duration) *redis.ClusterClient {
	t.Helper()
	o := redisconn.DefaultOptions()
	o.ClusterAddrs = c.Addrs
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: timeout}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return newClient(t, o).(*redis.ClusterClient)
}

// shard is one master of a cluster, its replica, and a hash tag whose keys it serves.
type shard struct {
	master, replica *redistest.Server
	tag             string
}

// key returns a key of the shard named name.
func (s shard) key(name string) string { return "{" + s.tag + "}" + name }

// shards returns the cluster's shards as they are now, each with a hash tag of its slots.
func shards(t *testing.T, c *redistest.Cluster) []shard {
	t.Helper()
	ctx := ctxT(t)
	plain := c.Client(t)
	out := make([]shard, len(c.Nodes))
	for i := range out {
		out[i].master = c.ShardMaster(t, i)
		out[i].replica = c.Replicas[i]
		if out[i].replica == out[i].master {
			out[i].replica = c.Nodes[i]
		}
	}
	for n, found := 0, 0; found < len(out); n++ {
		tag := strconv.Itoa(n)
		node, err := plain.MasterForKey(ctx, tag)
		if err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if out[i].tag == "" && out[i].master.Addr == node.Options().Addr {
				out[i].tag = tag
				found++
			}
		}
	}
	return out
}

// readOnlyClient returns a client of a cluster replica that answers reads of its master's slots.
func readOnlyClient(t *testing.T, replica *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: replica.Addr, OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err()
	}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wantOnReplica fails the test unless s's replica holds key = val.
func wantOnReplica(t *testing.T, s shard, key, val string) {
	t.Helper()
	if got, err := readOnlyClient(t, s.replica).Get(context.Background(), key).Result(); err != nil || got != val {
		t.Fatalf("replica %s has %s = %q, %v right after the write was acknowledged; want %q", s.replica.Addr, key, got, err, val)
	}
}

// waitsPerShard returns the WAIT count of every shard's master.
func waitsPerShard(t *testing.T, ss []shard) []int {
	t.Helper()
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = waitCalls(t, s.master)
	}
	return out
}

// TestDurabilityCluster_AcknowledgedWriteIsOnReplica: on a cluster of three masters with one
// replica each, every kind of write in every shard is on that shard's replica when it returns,
// with one WAIT on that shard's master; a pipeline across shards waits once per shard; reads
// send no WAIT.
func TestDurabilityCluster_AcknowledgedWriteIsOnReplica(t *testing.T) {
	c := redistest.StartClusterHA(t, 3)
	ss := shards(t, c)
	client := durableCluster(t, c, 2*time.Second)
	ctx := ctxT(t)
	if err := incrScript.Load(ctx, client).Err(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		run  func(s shard) (key, val string)
	}{
		{"SET", func(s shard) (string, string) {
			if err := client.Set(ctx, s.key("set"), s.tag, 0).Err(); err != nil {
				t.Fatal(err)
			}
			return s.key("set"), s.tag
		}},
		{"EVALSHA", func(s shard) (string, string) {
			n, err := incrScript.Run(ctx, client, []string{s.key("script")}).Int()
			if err != nil {
				t.Fatal(err)
			}
			return s.key("script"), strconv.Itoa(n)
		}},
		{"transaction", func(s shard) (string, string) {
			var get *redis.StringCmd
			_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, s.key("tx"), s.tag, 0)
				get = p.Get(ctx, s.key("tx"))
				return nil
			})
			if err != nil || get.Val() != s.tag {
				t.Fatalf("tx: %v, get %q", err, get.Val())
			}
			return s.key("tx"), s.tag
		}},
		{"node Conn", func(s shard) (string, string) {
			node, err := client.MasterForKey(ctx, s.key("conn"))
			if err != nil {
				t.Fatal(err)
			}
			conn := node.Conn()
			defer func() { _ = conn.Close() }()
			if err := conn.Set(ctx, s.key("conn"), s.tag, 0).Err(); err != nil {
				t.Fatal(err)
			}
			return s.key("conn"), s.tag
		}},
		{"BLMOVE", func(s shard) (string, string) {
			if err := client.Set(ctx, s.key("blmove"), "before", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := client.RPush(ctx, s.key("src"), s.tag).Err(); err != nil {
				t.Fatal(err)
			}
			if err := client.BLMove(ctx, s.key("src"), s.key("dst"), "RIGHT", "LEFT", time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if v, err := readOnlyClient(t, s.replica).LIndex(ctx, s.key("dst"), 0).Result(); err != nil || v != s.tag {
				t.Fatalf("replica dst[0] = %q, %v; want %q", v, err, s.tag)
			}
			return s.key("blmove"), "before"
		}},
	}
	waits := map[string]int{"BLMOVE": 3}
	for _, step := range steps {
		for i, s := range ss {
			before := waitsPerShard(t, ss)
			key, val := step.run(s)
			wantOnReplica(t, s, key, val)
			after := waitsPerShard(t, ss)
			for j := range ss {
				want := 0
				if j == i {
					want = max(waits[step.name], 1)
				}
				if got := after[j] - before[j]; got != want {
					t.Fatalf("%s in shard %d: %d WAITs on shard %d's master, want %d", step.name, i, got, j, want)
				}
			}
		}
	}

	before := waitsPerShard(t, ss)
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range ss {
			p.Set(ctx, s.key("pipe1"), s.tag, 0)
			p.Set(ctx, s.key("pipe2"), s.tag, 0)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after := waitsPerShard(t, ss)
	for i, s := range ss {
		wantOnReplica(t, s, s.key("pipe2"), s.tag)
		if got := after[i] - before[i]; got != 1 {
			t.Fatalf("pipeline across shards: %d WAITs on shard %d's master, want 1", got, i)
		}
	}

	before = waitsPerShard(t, ss)
	for _, s := range ss {
		_ = client.Get(ctx, s.key("set")).Err()
		_ = client.Exists(ctx, s.key("set")).Err()
		_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, s.key("a")); p.HGetAll(ctx, s.key("h")); return nil })
		_, _ = client.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, s.key("a")); return nil })
	}
	if after := waitsPerShard(t, ss); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("reads sent WAITs: %v before, %v after", before, after)
	}

	wantRead := time.Second + 2*time.Second
	node, err := client.MasterForKey(ctx, ss[0].key("k"))
	if err != nil {
		t.Fatal(err)
	}
	if rt, nrt := client.Options().ReadTimeout, node.Options().ReadTimeout; rt != wantRead || nrt != wantRead {
		t.Fatalf("ReadTimeout = %s (cluster), %s (node), want %s", rt, nrt, wantRead)
	}
}

// TestDurabilityCluster_MissingReplicaFailsOnlyItsShard: with one shard's replica gone, writes
// to that shard fail within about the wait timeout with ErrNotDurable while the other shards'
// writes, in the same pipeline too, still succeed.
func TestDurabilityCluster_MissingReplicaFailsOnlyItsShard(t *testing.T) {
	c := redistest.StartClusterHA(t, 3)
	ss := shards(t, c)
	const timeout = 200 * time.Millisecond
	client := durableCluster(t, c, timeout)
	ctx := ctxT(t)
	ss[0].replica.Kill(t)
	notDurable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, redisconn.ErrNotDurable) || !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("%s: err = %v, want EUNAVAILABLE wrapping ErrNotDurable", what, err)
		}
	}
	start := time.Now()
	notDurable("SET", client.Set(ctx, ss[0].key("k"), "v", 0).Err())
	if elapsed := time.Since(start); elapsed < timeout || elapsed > timeout+2*time.Second {
		t.Errorf("SET without replica took %s, want about %s", elapsed, timeout)
	}
	_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, ss[0].key("n")); return nil })
	notDurable("transaction", err)
	for _, s := range ss[1:] {
		if err := client.Set(ctx, s.key("k"), "v", 0).Err(); err != nil {
			t.Fatalf("SET in a shard with its replica: %v", err)
		}
	}
	cmds, _ := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range ss {
			p.Set(ctx, s.key("p"), "v", 0)
		}
		return nil
	})
	notDurable("pipeline part in the shard without replica", cmds[0].Err())
	for i, cmd := range cmds[1:] {
		if err := cmd.Err(); err != nil {
			t.Errorf("pipeline part in shard %d: %v", i+1, err)
		}
	}
}
