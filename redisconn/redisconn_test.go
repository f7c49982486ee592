package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

func newClient(t *testing.T, c redisconn.Options) redis.UniversalClient {
	t.Helper()
	client, err := redisconn.New(c)
	if err != nil {
		t.Fatalf("New(%s): %v", redisconn.Describe(c), err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNew_StandaloneURLSelectsDatabase(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxT(t)
	client := newClient(t, redisconn.Options{URL: srv.URL + "/2", DialTimeout: time.Second, PoolSize: 3})
	if _, ok := client.(*redis.Client); !ok {
		t.Fatalf("client is %T, want *redis.Client", client)
	}
	if err := redisconn.Ping(ctx, client); err != nil {
		t.Fatal(err)
	}
	if err := client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	info, err := client.Do(ctx, "CLIENT", "INFO").Text()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, " db=2 ") || !strings.Contains(info, fmt.Sprintf(" name=redstate-%d-", os.Getpid())) {
		t.Errorf("CLIENT INFO = %q, want db=2 and name=redstate-<pid>-<n>", info)
	}
	// The raw client on db 0 must not see the key.
	if n, err := srv.Client(t).Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("key visible on db 0: n=%d err=%v", n, err)
	}
	if got := clientOptions(t, client).PoolSize; got != 3 {
		t.Errorf("PoolSize = %d, want 3", got)
	}
}

// clientOptions exposes the *redis.Client options for assertions.
func clientOptions(t *testing.T, c redis.UniversalClient) *redis.Options {
	t.Helper()
	rc, ok := c.(*redis.Client)
	if !ok {
		t.Fatalf("client is %T", c)
	}
	return rc.Options()
}

func TestNew_ACLUser(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxT(t)
	if err := srv.Client(t).Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	hostPort := strings.TrimPrefix(srv.URL, "redis://")

	t.Run("credentials in URL", func(t *testing.T) {
		client := newClient(t, redisconn.Options{URL: "redis://app:pw@" + hostPort})
		if err := redisconn.Ping(ctx, client); err != nil {
			t.Fatal(err)
		}
		if who, err := client.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "app" {
			t.Fatalf("ACL WHOAMI = %q, %v; want app", who, err)
		}
	})
	t.Run("wrong password fails", func(t *testing.T) {
		client := newClient(t, redisconn.Options{URL: "redis://app:wrong@" + hostPort})
		err := redisconn.Ping(ctx, client)
		if err == nil {
			t.Fatal("Ping with a wrong password succeeded")
		}
		if !redstate.IsCode(err, redstate.EUNAVAILABLE) || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Fatalf("err = %v, want EUNAVAILABLE with WRONGPASS", err)
		}
	})
	t.Run("fields override URL credentials", func(t *testing.T) {
		client := newClient(t, redisconn.Options{URL: "redis://nobody:wrong@" + hostPort, Username: "app", Password: "pw"})
		if o := clientOptions(t, client); o.Username != "app" || o.Password != "pw" {
			t.Fatalf("options user=%q", o.Username)
		}
		if who, err := client.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "app" {
			t.Fatalf("ACL WHOAMI = %q, %v; want app", who, err)
		}
	})
}

func TestNew_TLSFromSchemeAndFlag(t *testing.T) {
	client := newClient(t, redisconn.Options{URL: "rediss://127.0.0.1:6380/0"})
	if o := clientOptions(t, client); o.TLSConfig == nil || o.TLSConfig.ServerName != "127.0.0.1" {
		t.Fatalf("rediss:// TLSConfig = %+v", o.TLSConfig)
	}
	client = newClient(t, redisconn.Options{URL: "redis://127.0.0.1:6380", TLS: true})
	if o := clientOptions(t, client); o.TLSConfig == nil {
		t.Fatal("tls: true did not enable TLS for a redis:// URL")
	}
	cc := newClient(t, redisconn.Options{ClusterAddrs: []string{"127.0.0.1:1"}, TLS: true}).(*redis.ClusterClient)
	if cc.Options().TLSConfig == nil {
		t.Fatal("cluster TLS not set")
	}
}

func TestNew_AppliesTimeouts(t *testing.T) {
	c := redisconn.Options{URL: "redis://127.0.0.1:1", DialTimeout: 3 * time.Second, ReadTimeout: 4 * time.Second, WriteTimeout: 5 * time.Second}
	o := clientOptions(t, newClient(t, c))
	if o.DialTimeout != 3*time.Second || o.ReadTimeout != 4*time.Second || o.WriteTimeout != 5*time.Second {
		t.Fatalf("timeouts = %s %s %s", o.DialTimeout, o.ReadTimeout, o.WriteTimeout)
	}
}

func TestNew_ClusterAddrs(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	ctx := ctxT(t)
	client := newClient(t, redisconn.Options{ClusterAddrs: cluster.Addrs[:1]})
	if _, ok := client.(*redis.ClusterClient); !ok {
		t.Fatalf("client is %T, want *redis.ClusterClient", client)
	}
	if err := redisconn.Ping(ctx, client); err != nil {
		t.Fatal(err)
	}
	// Keys spread over all three masters are reachable through one seed address.
	for i := range 50 {
		if err := client.Set(ctx, fmt.Sprintf("key-%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var perNode []int64
	for _, addr := range cluster.Addrs {
		node := redis.NewClient(&redis.Options{Addr: addr})
		n, err := node.DBSize(ctx).Result()
		_ = node.Close()
		if err != nil {
			t.Fatal(err)
		}
		perNode = append(perNode, n)
	}
	for i, n := range perNode {
		if n == 0 {
			t.Errorf("node %d holds no keys (%v): writes did not follow the slot map", i, perNode)
		}
	}
}

func TestNew_Sentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx := ctxT(t)
	client := newClient(t, redisconn.Options{Sentinel: redisconn.Sentinel{MasterName: s.MasterName, Addrs: s.Addrs}})
	if err := redisconn.Ping(ctx, client); err != nil {
		t.Fatal(err)
	}
	if err := client.Set(ctx, "via-sentinel", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Master.Client(t).Get(ctx, "via-sentinel").Result(); err != nil || got != "yes" {
		t.Fatalf("master has %q, %v", got, err)
	}
}

func TestNew_Errors(t *testing.T) {
	if _, err := redisconn.New(redisconn.Options{}); !errors.Is(err, redisconn.ErrNotConfigured) {
		t.Errorf("empty config: err = %v", err)
	}
	_, err := redisconn.New(redisconn.Options{URL: "redis://:secret@h:1", ClusterAddrs: []string{"h:2"}})
	if err == nil || !strings.Contains(err.Error(), "exactly one") || strings.Contains(err.Error(), "secret") {
		t.Errorf("two topologies: err = %v", err)
	}
	_, err = redisconn.New(redisconn.Options{URL: "http://user:secret@h:1"})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad scheme: err = %v", err)
	}
}

func TestPing_UnreachableIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	client := newClient(t, redisconn.Options{URL: "redis://" + addr, DialTimeout: 200 * time.Millisecond})
	err = redisconn.Ping(ctxT(t), client)
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("err = %v, want EUNAVAILABLE", err)
	}
}

func TestDescribe_NeverShowsPasswords(t *testing.T) {
	cases := []struct {
		c    redisconn.Options
		want string
	}{
		{redisconn.Options{}, "none (memory backend)"},
		{redisconn.Options{URL: "rediss://app:hunter2@redis.example:6380/3"}, "standalone rediss://app@redis.example:6380/3 (TLS)"},
		{redisconn.Options{ClusterAddrs: []string{"a:1", "b:2"}, Password: "hunter2", Username: "app", TLS: true}, "cluster a:1,b:2 as user app (TLS)"},
		{redisconn.Options{Sentinel: redisconn.Sentinel{MasterName: "mymaster", Addrs: []string{"s:26379"}, Password: "hunter2"}}, `sentinel master "mymaster" via s:26379`},
		{redisconn.Options{URL: "redis://h:1", Durability: redisconn.Durability{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond}}, "standalone redis://h:1, writes wait for 1 replicas (100ms)"},
	}
	for _, c := range cases {
		got := redisconn.Describe(c.c)
		if got != c.want {
			t.Errorf("Describe = %q, want %q", got, c.want)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("Describe leaks the password: %q", got)
		}
	}
}
