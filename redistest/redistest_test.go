package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { MainWithStandalone(m, func(addr string) { redisAddr = addr }) }

func TestStandalone_KillThenRestartKeepsAOFData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := StartStandalone(t, WithAppendOnly(true))
	if want := "redis://" + srv.Addr; srv.URL != want {
		t.Fatalf("URL = %q, want %q", srv.URL, want)
	}
	if _, err := redis.ParseURL(srv.URL); err != nil {
		t.Fatalf("ParseURL(%q): %v", srv.URL, err)
	}
	rdb := srv.Client(t)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if err := rdb.Set(ctx, "survivor", "v1", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	srv.Kill(t)
	if _, err := command(srv.Addr, probeTimeout, "PING"); err == nil {
		t.Fatal("PING succeeded after Kill")
	}
	srv.Kill(t) // killing a dead server is a no-op

	srv.Restart(t)
	got, err := rdb.Get(ctx, "survivor").Result()
	if err != nil || got != "v1" {
		t.Fatalf("GET after restart = %q, %v; want v1", got, err)
	}
}

func TestStandalone_StopThenRestartKeepsEverysecAOFData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := StartStandalone(t, WithAppendOnly(false))
	rdb := srv.Client(t)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	srv.Stop(t)
	srv.Restart(t)
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after graceful restart = %q, %v; want v", got, err)
	}
}

func TestStandalone_NoPersistenceByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := StartStandalone(t)
	rdb := srv.Client(t)
	for param, want := range map[string]string{"save": "", "appendonly": "no", "bind": "127.0.0.1", "protected-mode": "no"} {
		got, err := rdb.ConfigGet(ctx, param).Result()
		if err != nil || got[param] != want {
			t.Errorf("CONFIG GET %s = %v, %v; want %q", param, got, err, want)
		}
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	srv.Stop(t)
	srv.Restart(t)
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after restart = %d, %v; want 0 (no persistence)", n, err)
	}
}

func TestWithConfig_ReplacesDefaultsAndAddsDirectives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := StartStandalone(t,
		WithConfig("save", `"3600 1"`),
		WithConfig("maxmemory-policy", "allkeys-lru"),
	)
	rdb := srv.Client(t)
	for param, want := range map[string]string{"save": "3600 1", "maxmemory-policy": "allkeys-lru"} {
		got, err := rdb.ConfigGet(ctx, param).Result()
		if err != nil || got[param] != want {
			t.Errorf("CONFIG GET %s = %v, %v; want %q", param, got, err, want)
		}
	}
}

func TestStart_BadConfigReportsLogTail(t *testing.T) {
	t.Parallel()
	bin := RequireServer(t)
	_, err := startNew(bin, t.TempDir(), options{directives: [][2]string{{"no-such-directive", "1"}}})
	if err == nil {
		t.Fatal("start with a bad directive succeeded")
	}
	if errors.Is(err, errAddrInUse) {
		t.Fatalf("bad config misreported as port clash: %v", err)
	}
	if !strings.Contains(err.Error(), "no-such-directive") {
		t.Fatalf("error lacks the server's complaint:\n%v", err)
	}
}

func TestCluster_ThreeMastersServeKeysAndSurviveNodeRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := StartCluster(t, 3)
	if len(c.Addrs) != 3 || len(c.Nodes) != 3 {
		t.Fatalf("got %d addrs, %d nodes; want 3", len(c.Addrs), len(c.Nodes))
	}
	cc := c.Client(t)

	writeAndRead := func(round int) {
		t.Helper()
		for i := 0; i < 100; i++ {
			if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), fmt.Sprintf("%d/%d", round, i), 0).Err(); err != nil {
				t.Fatalf("round %d SET key:%d: %v", round, i, err)
			}
		}
		for i := 0; i < 100; i++ {
			got, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Result()
			if want := fmt.Sprintf("%d/%d", round, i); err != nil || got != want {
				t.Fatalf("round %d GET key:%d = %q, %v; want %q", round, i, got, err, want)
			}
		}
	}
	writeAndRead(1)

	// Keys spread over all masters.
	for _, n := range c.Nodes {
		rdb := n.Client(t)
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("CLUSTER INFO on %s = %q, %v", n.Addr, info, err)
		}
		if size, err := rdb.DBSize(ctx).Result(); err != nil || size == 0 {
			t.Errorf("node %s holds %d keys (%v); want some of the 100", n.Addr, size, err)
		}
	}

	c.Nodes[1].Kill(t)
	c.Nodes[1].Restart(t)
	if err := waitClusterAgree(c.Nodes, timeNowPlus(clusterTimeout)); err != nil {
		t.Fatalf("cluster after node restart: %v", err)
	}
	writeAndRead(2)

	c.FlushAll(t)
	if n, err := cc.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after FlushAll = %d, %v; want 0", n, err)
	}
}

func TestSentinel_ReportsMasterAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := StartSentinel(t)
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addrs[0]})
	t.Cleanup(func() { _ = sc.Close() })
	addr, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
	if err != nil {
		t.Fatalf("SENTINEL get-master-addr-by-name: %v", err)
	}
	if got := addr[0] + ":" + addr[1]; got != s.Master.Addr {
		t.Fatalf("sentinel reports master %s, want %s", got, s.Master.Addr)
	}
	fc := s.Client(t)
	if err := fc.Set(ctx, "via-sentinel", "1", 0).Err(); err != nil {
		t.Fatalf("SET through failover client: %v", err)
	}
	if got, err := s.Master.Client(t).Get(ctx, "via-sentinel").Result(); err != nil || got != "1" {
		t.Fatalf("GET on master = %q, %v; want 1", got, err)
	}
}

func TestShared_ReusedAndFlushed(t *testing.T) {
	ctx := context.Background()
	a := SharedStandalone(t)
	if err := a.Client(t).Set(ctx, "left-over", "1", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	b := SharedStandalone(t)
	if a != b {
		t.Fatal("SharedStandalone returned a different server")
	}
	if n, err := b.Client(t).Exists(ctx, "left-over").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after second SharedStandalone = %d, %v; want 0", n, err)
	}

	// A test that kills the shared server does not break the next one.
	b.Kill(t)
	if c := SharedStandalone(t); c.Client(t).Ping(ctx).Err() != nil {
		t.Fatal("shared server not restarted after Kill")
	}

	c1 := SharedCluster(t)
	if err := c1.Client(t).Set(ctx, "left-over", "1", 0).Err(); err != nil {
		t.Fatalf("cluster SET: %v", err)
	}
	c2 := SharedCluster(t)
	if c1 != c2 {
		t.Fatal("SharedCluster returned a different cluster")
	}
	if n, err := c2.Client(t).Exists(ctx, "left-over").Result(); err != nil || n != 0 {
		t.Fatalf("cluster EXISTS after second SharedCluster = %d, %v; want 0", n, err)
	}
}

func timeNowPlus(d time.Duration) time.Time { return time.Now().Add(d) }
