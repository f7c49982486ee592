package redisconn_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// eventually polls cond every millisecond until it holds, failing the test after 10 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after 10s", what, got)
		}
		time.Sleep(time.Millisecond)
	}
}

// mustGet reads key through the cache.
func mustGet(t *testing.T, c *redisconn.Cache, key string) string {
	t.Helper()
	v, err := c.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	if v == nil {
		return "<nil>"
	}
	return string(v)
}

func TestNewCache_OffReturnsNil(t *testing.T) {
	c, err := redisconn.NewCache(redisconn.Options{URL: "redis://127.0.0.1:1"})
	if err != nil || c != nil {
		t.Fatalf("NewCache with the cache off = %v, %v; want nil, nil", c, err)
	}
}

// TestCache_HitsUntilAnotherClientWrites: a second read is a hit, a write by another client
// (the go-redis client, as the stores write) invalidates it, and a missing key is cached too.
func TestCache_HitsUntilAnotherClientWrites(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxT(t)
	raw := srv.Client(t)
	cache := redistest.NewCache(t, redisconn.Options{URL: srv.URL})
	if err := raw.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, cache, "k"); got != "v1" {
		t.Fatalf("first read = %s, want v1", got)
	}
	if got := mustGet(t, cache, "k"); got != "v1" {
		t.Fatalf("second read = %s, want v1", got)
	}
	if st := cache.Stats(); st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("stats after two reads = %+v, want 1 hit 1 miss", st)
	}
	if err := raw.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "read after another client's write", func() (bool, string) {
		got := mustGet(t, cache, "k")
		return got == "v2", got
	})
	if got := mustGet(t, cache, "missing"); got != "<nil>" {
		t.Fatalf("missing key = %s", got)
	}
	if err := raw.Set(ctx, "missing", "now", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a cached absence after the key is created", func() (bool, string) {
		got := mustGet(t, cache, "missing")
		return got == "now", got
	})
}

// TestCache_OwnWritesBypassTheCache: after Wrote, reads go to Redis at once, whatever the
// invalidation's delay; outside the window they are cached again.
func TestCache_OwnWritesBypassTheCache(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxT(t)
	raw := srv.Client(t)
	cache := redistest.NewCache(t, redisconn.Options{URL: srv.URL, ClientCache: redisconn.CacheOptions{OwnWriteWindow: 200 * time.Millisecond}})
	if err := raw.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, cache, "k")
	cache.Wrote("k")
	if err := raw.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cache.Wrote("k")
	if got := mustGet(t, cache, "k"); got != "v2" {
		t.Fatalf("read right after this process's write = %s, want v2", got)
	}
	vals, err := cache.MGet(ctx, []string{"k", "other"})
	if err != nil || string(vals[0]) != "v2" || vals[1] != nil {
		t.Fatalf("MGet right after the write = %q, %v", vals, err)
	}
	if st := cache.Stats(); st.Bypassed != 2 {
		t.Fatalf("bypassed = %d, want 2 (Get and MGet of the written key)", st.Bypassed)
	}
	eventually(t, "the key cached again after the window", func() (bool, string) {
		before := cache.Stats().Hits
		mustGet(t, cache, "k")
		return cache.Stats().Hits > before, fmt.Sprint(cache.Stats())
	})
}

// TestCache_DropsEverythingWhenItsConnectionDrops: a write Redis cannot report (made while the
// tracked connection is gone) must not leave the old value cached: the cache is dropped with
// its connection. Without that the stale value would stay for the whole TTL (1 minute).
func TestCache_DropsEverythingWhenItsConnectionDrops(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxT(t)
	raw := srv.Client(t)
	cache := redistest.NewCache(t, redisconn.Options{URL: srv.URL})
	if err := raw.Set(ctx, "k", "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, cache, "k")
	if got := mustGet(t, cache, "k"); got != "old" || cache.Stats().Hits != 1 {
		t.Fatalf("not cached: %s %+v", got, cache.Stats())
	}
	killed := killCacheConnections(t, raw)
	if killed == 0 {
		t.Fatal("no cache connection found in CLIENT LIST")
	}
	if err := raw.Set(ctx, "k", "new", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "read after the connection dropped", func() (bool, string) {
		v, err := cache.Get(ctx, "k")
		if err != nil {
			return false, err.Error()
		}
		return string(v) == "new", string(v)
	})
}

// killCacheConnections kills every connection whose name ends in "-cache" and returns how many.
func killCacheConnections(t *testing.T, raw *redis.Client) int {
	t.Helper()
	ctx := ctxT(t)
	list, err := raw.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		var id, name string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(f, "name="); ok {
				name = v
			}
		}
		if strings.HasSuffix(name, "-cache") {
			if err := raw.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

// TestCache_ClusterReadsAcrossSlots: MGet over keys of every master and HGetAll, with
// invalidation from any node.
func TestCache_ClusterReadsAcrossSlots(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := ctxT(t)
	raw := cl.Client(t)
	prefix := "cachetest:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
		if err := raw.Set(ctx, keys[i], "v"+strconv.Itoa(i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cache := redistest.NewCache(t, redisconn.Options{ClusterAddrs: cl.Addrs})
	for round := 0; round < 2; round++ {
		vals, err := cache.MGet(ctx, append(keys, prefix+"missing"))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals[:len(keys)] {
			if string(v) != "v"+strconv.Itoa(i) {
				t.Fatalf("round %d: %s = %q", round, keys[i], v)
			}
		}
		if vals[len(keys)] != nil {
			t.Fatalf("missing key = %q", vals[len(keys)])
		}
	}
	if st := cache.Stats(); st.Hits != int64(len(keys)+1) {
		t.Fatalf("second MGet hits = %+v, want %d", st, len(keys)+1)
	}
	for _, k := range keys {
		if err := raw.Set(ctx, k, "changed", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every key after writes on every master", func() (bool, string) {
		vals, err := cache.MGet(ctx, keys)
		if err != nil {
			return false, err.Error()
		}
		for _, v := range vals {
			if string(v) != "changed" {
				return false, string(v)
			}
		}
		return true, ""
	})
	h := prefix + "hash"
	if err := raw.HSet(ctx, h, "a", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := cache.HGetAll(ctx, h); err != nil || m["a"] != "1" {
		t.Fatalf("HGetAll = %v, %v", m, err)
	}
	if err := raw.HSet(ctx, h, "b", "2").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "hash after HSET", func() (bool, string) {
		m, err := cache.HGetAll(ctx, h)
		return err == nil && m["b"] == "2", fmt.Sprint(m, err)
	})
}

// TestCache_SentinelFindsTheMaster: the cache reaches the master through the sentinels.
func TestCache_SentinelFindsTheMaster(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx := ctxT(t)
	if err := s.Master.Client(t).Set(ctx, "k", "via-sentinel", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cache := redistest.NewCache(t, redisconn.Options{Sentinel: redisconn.Sentinel{MasterName: s.MasterName, Addrs: s.Addrs}})
	if got := mustGet(t, cache, "k"); got != "via-sentinel" {
		t.Fatalf("Get via sentinel = %s", got)
	}
}

// TestCache_UnreachableRedisIsUnavailableAndRetried: reads fail with EUNAVAILABLE while Redis
// is down and succeed once it answers, without a new Cache.
func TestCache_UnreachableRedisIsUnavailableAndRetried(t *testing.T) {
	srv := redistest.StartStandalone(t)
	srv.Stop(t)
	cache := redistest.NewCache(t, redisconn.Options{URL: srv.URL, DialTimeout: 200 * time.Millisecond})
	if _, err := cache.Get(ctxT(t), "k"); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Get with Redis down = %v, want EUNAVAILABLE", err)
	}
	srv.Restart(t)
	eventually(t, "read once Redis is back", func() (bool, string) {
		_, err := cache.Get(context.Background(), "k")
		return err == nil, fmt.Sprint(err)
	})
}

func TestCacheOptions_Validate(t *testing.T) {
	o := redisconn.DefaultOptions()
	o.URL = "redis://127.0.0.1:6379"
	o.ClientCache = redisconn.CacheOptions{Enabled: true, Size: 10, TTL: -time.Second, OwnWriteWindow: -1}
	err := o.Validate()
	for _, want := range []string{"redis.client-cache.size", "redis.client-cache.ttl", "redis.client-cache.own-write-window"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a problem naming %s", err, want)
		}
	}
}

// TestCache_TLSVerifiesTheServerWithTheConfiguredCA: the cache connects over rediss:// with the
// same CA setting as the go-redis client, and refuses an untrusted certificate.
func TestCache_TLSVerifiesTheServerWithTheConfiguredCA(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	tlsPort := freePort(t)
	srv := redistest.StartStandalone(t,
		redistest.WithConfig("tls-port", strconv.Itoa(tlsPort)),
		redistest.WithConfig("tls-cert-file", certFile),
		redistest.WithConfig("tls-key-file", keyFile),
		redistest.WithConfig("tls-auth-clients", "no"),
	)
	if err := srv.Client(t).Set(ctxT(t), "k", "over-tls", 0).Err(); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("rediss://127.0.0.1:%d", tlsPort)
	trusted := redistest.NewCache(t, redisconn.Options{URL: url, TLSCAFile: certFile})
	if got := mustGet(t, trusted, "k"); got != "over-tls" {
		t.Fatalf("Get over TLS = %s", got)
	}
	untrusted := redistest.NewCache(t, redisconn.Options{URL: url})
	if _, err := untrusted.Get(ctxT(t), "k"); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Get over TLS without trusting the certificate = %v, want EUNAVAILABLE", err)
	}
}

// TestCache_LeavesTheSeedListAlone: rueidis shuffles its seed addresses in place; the cache
// must shuffle a copy, since the configured list is the go-redis client's too (it raced with
// the cluster client's reads of it).
func TestCache_LeavesTheSeedListAlone(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	var seeds []string
	for range 4 { // 12 seeds: a shuffle that leaves them in order is one in millions
		seeds = append(seeds, cl.Addrs...)
	}
	want := slices.Clone(seeds)
	cache := redistest.NewCache(t, redisconn.Options{ClusterAddrs: seeds})
	if _, err := cache.Get(ctxT(t), "k"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seeds, want) {
		t.Fatalf("the configured seed list was reordered: %v, want %v", seeds, want)
	}
}
