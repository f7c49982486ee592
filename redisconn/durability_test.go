package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// waitCalls returns how many WAIT commands srv has run since its last CONFIG RESETSTAT.
func waitCalls(t *testing.T, srv *redistest.Server) int {
	return redistest.CommandCalls(t, srv.Client(t), "wait")
}

func resetStats(t *testing.T, srv *redistest.Server) {
	t.Helper()
	if err := srv.Client(t).ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// durableClient returns a client of master whose writes wait for replicas replicas.
func durableClient(t *testing.T, master *redistest.Server, replicas int, timeout time.Duration) redis.UniversalClient {
	t.Helper()
	o := redisconn.DefaultOptions()
	o.URL = master.URL
	o.Durability = redisconn.Durability{WaitReplicas: replicas, WaitTimeout: timeout}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return newClient(t, o)
}

var incrScript = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// TestDurability_AcknowledgedWriteIsOnReplica: every kind of write (command, script, pipeline,
// transaction, dedicated connection, blocking move) is on the replica when it returns, each
// with one WAIT, and reads send none.
func TestDurability_AcknowledgedWriteIsOnReplica(t *testing.T) {
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	ctx := ctxT(t)
	client := durableClient(t, master, 1, 2*time.Second)
	onReplica := replica.Client(t)
	want := func(key, val string) {
		t.Helper()
		if got, err := onReplica.Get(ctx, key).Result(); err != nil || got != val {
			t.Fatalf("replica has %s = %q, %v right after the write was acknowledged; want %q", key, got, err, val)
		}
	}
	if err := incrScript.Load(ctx, client).Err(); err != nil {
		t.Fatal(err)
	}
	resetStats(t, master)
	steps := []struct {
		name  string
		waits int // WAITs this step adds
		run   func(i int) (key, val string)
	}{
		{"SET", 1, func(i int) (string, string) {
			k := fmt.Sprintf("set-%d", i)
			if err := client.Set(ctx, k, i, 0).Err(); err != nil {
				t.Fatal(err)
			}
			return k, strconv.Itoa(i)
		}},
		{"reads", 0, func(i int) (string, string) {
			_ = client.Get(ctx, "set-0").Err()
			_ = client.Exists(ctx, "set-0").Err()
			_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, "a"); p.HGetAll(ctx, "h"); return nil })
			return "set-0", "0"
		}},
		{"EVALSHA", 1, func(i int) (string, string) {
			n, err := incrScript.Run(ctx, client, []string{"script"}).Int()
			if err != nil {
				t.Fatal(err)
			}
			return "script", strconv.Itoa(n)
		}},
		{"pipeline", 1, func(i int) (string, string) {
			_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "p1", i, 0)
				p.Set(ctx, "p2", i, 0)
				p.Set(ctx, "p3", i, 0)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return "p3", strconv.Itoa(i)
		}},
		{"transaction", 1, func(i int) (string, string) {
			var get *redis.StringCmd
			_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "tx", i, 0)
				get = p.Get(ctx, "tx")
				return nil
			})
			if err != nil || get.Val() != strconv.Itoa(i) {
				t.Fatalf("tx: %v, get %q", err, get.Val())
			}
			return "tx", strconv.Itoa(i)
		}},
		{"Conn", 1, func(i int) (string, string) {
			conn := client.(*redis.Client).Conn()
			defer func() { _ = conn.Close() }()
			if err := conn.Set(ctx, "conn", i, 0).Err(); err != nil {
				t.Fatal(err)
			}
			return "conn", strconv.Itoa(i)
		}},
		{"BLMOVE", 2, func(i int) (string, string) {
			if err := client.RPush(ctx, "src", i).Err(); err != nil {
				t.Fatal(err)
			}
			if err := client.BLMove(ctx, "src", "dst", "RIGHT", "LEFT", time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			v, err := onReplica.LIndex(ctx, "dst", 0).Result()
			if err != nil || v != strconv.Itoa(i) {
				t.Fatalf("replica dst[0] = %q, %v; want %d", v, err, i)
			}
			return "set-0", "0"
		}},
	}
	for i := range 5 {
		for _, s := range steps {
			before := waitCalls(t, master)
			key, val := s.run(i)
			want(key, val)
			if got := waitCalls(t, master) - before; got != s.waits {
				t.Fatalf("round %d %s: %d WAITs, want %d", i, s.name, got, s.waits)
			}
		}
	}
}

// TestDurability_MissingReplicaFailsTheWrite: with the replica gone a write fails with
// EUNAVAILABLE naming the counts, within about the wait timeout, and is still on the master.
func TestDurability_MissingReplicaFailsTheWrite(t *testing.T) {
	master := redistest.StartStandalone(t)
	replica := redistest.StartReplica(t, master)
	ctx := ctxT(t)
	const timeout = 200 * time.Millisecond
	client := durableClient(t, master, 1, timeout)
	if err := client.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	replica.Kill(t)
	check := func(what string, err error, elapsed time.Duration) {
		t.Helper()
		if !redstate.IsCode(err, redstate.EUNAVAILABLE) || !errors.Is(err, redisconn.ErrNotDurable) || !strings.Contains(err.Error(), "acknowledged by 0 of 1 replicas within 200ms") {
			t.Fatalf("%s: err = %v, want EUNAVAILABLE wrapping ErrNotDurable with the counts", what, err)
		}
		if elapsed < timeout || elapsed > timeout+2*time.Second {
			t.Errorf("%s took %s, want about %s", what, elapsed, timeout)
		}
	}
	start := time.Now()
	err := client.Set(ctx, "k", "after", 0).Err()
	check("SET", err, time.Since(start))
	start = time.Now()
	cmds, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Incr(ctx, "n")
		return nil
	})
	check("pipeline", err, time.Since(start))
	if cmds[0].Err() != nil {
		t.Errorf("the read in the pipeline failed too: %v", cmds[0].Err())
	}
	// The write happened on the master: the error says it may still be there.
	if got, err := client.Get(ctx, "k").Result(); err != nil || got != "after" {
		t.Fatalf("master has %q, %v", got, err)
	}
}

// TestDurability_OffSendsNoWait: with wait-replicas 0 no WAIT is sent and the read timeout is
// the configured one.
func TestDurability_OffSendsNoWait(t *testing.T) {
	master := redistest.StartStandalone(t)
	ctx := ctxT(t)
	o := redisconn.DefaultOptions()
	o.URL = master.URL
	client := newClient(t, o)
	resetStats(t, master)
	for i := range 10 {
		if err := client.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, "n"); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := waitCalls(t, master); n != 0 {
		t.Fatalf("%d WAITs with durability off", n)
	}
	if rt := clientOptions(t, client).ReadTimeout; rt != time.Second {
		t.Fatalf("ReadTimeout = %s, want 1s", rt)
	}
	o.Durability.WaitReplicas = 1
	if rt := clientOptions(t, newClient(t, o)).ReadTimeout; rt != time.Second+redisconn.DefaultWaitTimeout {
		t.Fatalf("ReadTimeout with durability = %s, want 1.1s", rt)
	}
}

func TestDurability_Validate(t *testing.T) {
	o := redisconn.DefaultOptions()
	o.ClusterAddrs = []string{"127.0.0.1:7000"}
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 1500 * time.Microsecond}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "redis.durability.wait-timeout: must be a whole number of milliseconds") {
		t.Errorf("err = %v, want the wait-timeout problem", err)
	}
	o.Durability.WaitTimeout = 2 * time.Millisecond
	if err := o.Validate(); err != nil {
		t.Errorf("wait-replicas on Redis Cluster: err = %v, want none", err)
	}
	o.Durability = redisconn.Durability{WaitReplicas: -1}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "redis.durability.wait-replicas: must not be negative") {
		t.Errorf("err = %v", err)
	}
}

// TestDurability_Sentinel: through Sentinel, a write (here a script returning nil) is on the
// master's replica when acknowledged, and fails once the replica is gone.
func TestDurability_Sentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	replica := redistest.StartReplica(t, s.Master)
	ctx := ctxT(t)
	o := redisconn.DefaultOptions()
	o.Sentinel = redisconn.Sentinel{MasterName: s.MasterName, Addrs: s.Addrs}
	o.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 2 * time.Second}
	client := newClient(t, o)
	setNil := redis.NewScript(`redis.call('SET', KEYS[1], ARGV[1]); return nil`)
	if err := setNil.Run(ctx, client, []string{"k"}, "v1").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("script: %v, want redis.Nil", err)
	}
	if got, err := replica.Client(t).Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Fatalf("replica has %q, %v", got, err)
	}
	replica.Kill(t)
	o.Durability.WaitTimeout = 100 * time.Millisecond
	client = newClient(t, o)
	err := setNil.Run(ctx, client, []string{"k"}, "v2").Err()
	if !errors.Is(err, redisconn.ErrNotDurable) || !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("script without replica: err = %v, want ErrNotDurable", err)
	}
}

// TestDurability_NilRepliesStayNil: a write that answers nil (BLMOVE timing out on a Conn and on
// the pool, SET NX not setting) still reports redis.Nil.
func TestDurability_NilRepliesStayNil(t *testing.T) {
	master := redistest.StartStandalone(t)
	redistest.StartReplica(t, master)
	ctx := ctxT(t)
	client := durableClient(t, master, 1, 2*time.Second)
	conn := client.(*redis.Client).Conn()
	defer func() { _ = conn.Close() }()
	if err := conn.BLMove(ctx, "empty", "dst", "RIGHT", "LEFT", 100*time.Millisecond).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("BLMOVE on a Conn: err = %v, want redis.Nil", err)
	}
	if err := client.BLMove(ctx, "empty", "dst", "RIGHT", "LEFT", 100*time.Millisecond).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("BLMOVE: err = %v, want redis.Nil", err)
	}
	if err := client.SetArgs(ctx, "k", "v", redis.SetArgs{Mode: "NX", Get: true}).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("SET NX GET on a new key: err = %v, want redis.Nil", err)
	}
}
