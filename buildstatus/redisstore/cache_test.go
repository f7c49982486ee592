package redisstore_test

import (
	"context"
	"fmt"
	"sync"
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

// newCachedStoreOn is newStoreOn with every store reading through cache.
func newCachedStoreOn(client redis.UniversalClient, cache redisconn.ReadCache) storetest.NewStore {
	return func(t *testing.T, ttl time.Duration) buildstatus.Store {
		t.Helper()
		return mustNewWith(t, client, ttl, cache)
	}
}

func mustNewWith(t *testing.T, client redis.UniversalClient, ttl time.Duration, cache redisconn.ReadCache) *redisstore.Store {
	t.Helper()
	keys := buildstatus.NewKeys(redstate.Prefix(fmt.Sprintf("t%d-", namespaces.Add(1)), ""))
	s, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: ttl, Cache: cache})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The whole contract holds with the client-side cache on: a store reads its own writes. (On
// Cluster the cached paths are the same code; TestClientCache_ConditionalWritesReadRedis and
// redisconn's TestCache_ClusterReadsAcrossSlots cover them there.)
func TestStore_Standalone_Conformance_ClientCache(t *testing.T) {
	srv := redistest.SharedStandalone(t)
	cache := redistest.NewCache(t, redisconn.Options{URL: srv.URL})
	storetest.RunStoreSuite(t, newCachedStoreOn(srv.Client(t), cache), storetest.Features{})
}

// TestClientCache_GetAndGetManyAreServedFromMemory: once read, a build another process does
// not change is read without a round trip; a save of this process is read back at once.
func TestClientCache_GetAndGetManyAreServedFromMemory(t *testing.T) {
	srv := redistest.SharedStandalone(t)
	cache := redistest.NewCache(t, redisconn.Options{URL: srv.URL, ClientCache: redisconn.CacheOptions{OwnWriteWindow: time.Millisecond}})
	s := mustNewWith(t, srv.Client(t), time.Hour, cache)
	ctx := t.Context()
	id := storetest.NewBuildID()
	saved, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // past the own-write window
	for range 2 {
		if b, err := s.Get(ctx, id); err != nil || b.ETag() != saved.ETag() {
			t.Fatalf("Get = %v, %v", b, err)
		}
	}
	if m, err := s.GetMany(ctx, []string{id}); err != nil || m[id].ETag() != saved.ETag() {
		t.Fatalf("GetMany = %v, %v", m, err)
	}
	if st := cache.Stats(); st.Hits != 2 || st.Misses != 1 {
		t.Fatalf("stats = %+v, want 1 miss then 2 hits", st)
	}
}

// TestClientCache_AnotherInstanceSeesASaveOnceInvalidated: instance B has the build cached;
// instance A (its own client and cache, as another process) saves a new version; B serves the
// new version once Redis's invalidation arrives, without B writing anything.
func TestClientCache_AnotherInstanceSeesASaveOnceInvalidated(t *testing.T) {
	srv := redistest.SharedStandalone(t)
	keys := buildstatus.NewKeys(redstate.Prefix(fmt.Sprintf("t%d-", namespaces.Add(1)), ""))
	open := func() *redisstore.Store {
		s, err := redisstore.New(srv.Client(t), redisstore.Options{Keys: keys, TTL: time.Hour, Cache: redistest.NewCache(t, redisconn.Options{URL: srv.URL})})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b := open(), open()
	ctx := t.Context()
	id := storetest.NewBuildID()
	doc := storetest.SampleDoc(id, "p")
	if _, err := a.Save(ctx, doc, buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	first, err := b.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	doc.Status = "PUBLISHED"
	saved, err := a.Save(ctx, doc, buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if saved.ETag() == first.ETag() {
		t.Fatal("the second save did not change the document")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := b.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.ETag() == saved.ETag() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance B still serves ETag %s 10s after A saved %s", got.ETag(), saved.ETag())
		}
		time.Sleep(time.Millisecond)
	}
}

// staleCache is a client-side cache that answers every read of a String with a fixed old value
// and counts reads (the store reads no other type through it; the embedded nil interface
// would panic if it did).
type staleCache struct {
	redisconn.ReadCache
	mu    sync.Mutex
	value []byte
	reads int
}

func (c *staleCache) Get(context.Context, string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.value, nil
}

func (c *staleCache) MGet(_ context.Context, keys []string) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads += len(keys)
	out := make([][]byte, len(keys))
	for i := range out {
		out[i] = c.value
	}
	return out, nil
}

func (c *staleCache) Wrote(...string) {}

func (c *staleCache) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// TestClientCache_ConditionalWritesReadRedis: UpdatePlatform and Delete base their ETag on
// Redis, never on the cache (which here always answers a stale version).
func TestClientCache_ConditionalWritesReadRedis(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		keys := buildstatus.NewKeys(redstate.Prefix(fmt.Sprintf("t%d-", namespaces.Add(1)), ""))
		plain, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = plain.Close() })
		id := storetest.NewBuildID()
		old, err := plain.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := &staleCache{value: old.JSON}
		cached, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: time.Hour, Cache: stale})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cached.Close() })
		updated, err := plain.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "a", Status: "SUCCESS"}, "")
		if err != nil {
			t.Fatal(err)
		}
		next, err := cached.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "b", Status: "SUCCESS"}, updated.ETag())
		if err != nil {
			t.Fatalf("UpdatePlatform with the current ETag through a stale cache: %v", err)
		}
		if err := cached.Delete(ctx, id, next.ETag()); err != nil {
			t.Fatalf("Delete with the current ETag through a stale cache: %v", err)
		}
		if n := stale.readCount(); n != 0 {
			t.Fatalf("conditional writes read the cache %d times", n)
		}
		if got, err := cached.Get(ctx, id); err != nil || got.ETag() != old.ETag() {
			t.Fatalf("Get = %v, %v; want the cache's (stale) answer: Get does read the cache", got, err)
		}
	})
}
