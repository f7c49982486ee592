package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// namespaces makes every store's key prefix unique within the test binary.
var namespaces atomic.Int64

// newStoreOn returns a storetest.NewStore whose stores share client but never each other's
// keys (a unique namespace each), since the suite's subtests run in parallel.
func newStoreOn(client redis.UniversalClient) storetest.NewStore {
	return func(t *testing.T, ttl time.Duration) buildstatus.Store {
		t.Helper()
		return mustNew(t, client, ttl)
	}
}

func mustNew(t *testing.T, client redis.UniversalClient, ttl time.Duration) *redisstore.Store {
	t.Helper()
	keys := buildstatus.NewKeys(redstate.Prefix(fmt.Sprintf("t%d-", namespaces.Add(1)), ""))
	s, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: ttl})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStore_Standalone_Conformance(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	storetest.RunStoreSuite(t, newStoreOn(client), storetest.Features{})
}

func TestStore_Cluster_Conformance(t *testing.T) {
	client := redistest.SharedCluster(t).Client(t)
	storetest.RunStoreSuite(t, newStoreOn(client), storetest.Features{})
}

func TestSave_StoresSeedJSONAtSeedKeyWithTTL(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		// The seed's layout exactly: no namespace, "ingenio:publish:build:<uuid>".
		s, err := redisstore.New(client, redisstore.Options{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		doc := storetest.SampleDoc("", "")
		b, err := s.Save(ctx, doc, buildstatus.SaveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		key := "ingenio:publish:build:550e8400-e29b-41d4-a716-446655440000"
		raw, err := client.Get(ctx, key).Bytes()
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		want, _ := buildstatus.Encode(doc)
		if string(raw) != string(want) || string(b.JSON) != string(want) {
			t.Fatalf("stored %s\nwant %s", raw, want)
		}
		if b.ETag() != buildstatus.ETagOf(raw) {
			t.Fatalf("ETag %s, want sha1 of stored bytes %s", b.ETag(), buildstatus.ETagOf(raw))
		}
		pttl, err := client.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if pttl <= time.Hour-time.Minute || pttl > time.Hour {
			t.Fatalf("PTTL %s, want about 1h", pttl)
		}
	})
}

// TestSave_ProjectIndexNeverExpiresBeforeItsBuilds saves through stores with different TTLs
// sharing one keyspace: the index takes the first TTL, is extended by a longer one and never
// shortened by a shorter one.
func TestSave_ProjectIndexNeverExpiresBeforeItsBuilds(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		keys := buildstatus.NewKeys(redstate.Prefix(fmt.Sprintf("ttl%d-", namespaces.Add(1)), ""))
		storeWith := func(ttl time.Duration) *redisstore.Store {
			s, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		id := storetest.NewBuildID()
		indexTTL := func() time.Duration {
			t.Helper()
			key := keys.ProjectIndex("p")
			if redisconn.IsCluster(client) {
				key = keys.ProjectShard("p", id)
			}
			d, err := client.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		for _, step := range []struct {
			ttl       time.Duration
			wantAbout time.Duration
		}{{time.Hour, time.Hour}, {2 * time.Hour, 2 * time.Hour}, {10 * time.Minute, 2 * time.Hour}} {
			if _, err := storeWith(step.ttl).Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := indexTTL(); got > step.wantAbout || got < step.wantAbout-time.Minute {
				t.Fatalf("after a save with TTL %s the index TTL is %s, want about %s", step.ttl, got, step.wantAbout)
			}
		}
	})
}

func TestSave_ClusterShardInBuildKeySlot(t *testing.T) {
	client := redistest.SharedCluster(t).Client(t)
	ctx := t.Context()
	s := mustNew(t, client, time.Hour)
	keys := keysOf(t, s, client, "p{1}*")
	for range 20 {
		id := storetest.NewBuildID()
		if _, err := s.Save(ctx, storetest.SampleDoc(id, "p{1}*"), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		build, shard := keys.Build(id), keys.ProjectShard("p{1}*", id)
		want, err := client.ClusterKeySlot(ctx, build).Result()
		if err != nil {
			t.Fatal(err)
		}
		got, err := client.ClusterKeySlot(ctx, shard).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got != want || int(got) != keyspace.Slot(build) {
			t.Fatalf("shard %s in slot %d, build %s in slot %d", shard, got, build, want)
		}
		if score, err := client.ZScore(ctx, shard, id).Result(); err != nil || score == 0 {
			t.Fatalf("ZSCORE %s %s = %v, %v", shard, id, score, err)
		}
		member, err := client.SIsMember(ctx, keys.ProjectShards("p{1}*"), keys.SlotOfBuild(id)).Result()
		if err != nil || !member {
			t.Fatalf("slot %s not in the shard directory: %v %v", keys.SlotOfBuild(id), member, err)
		}
	}
}

// keysOf recovers the Keys of a store made by mustNew from the key its first save writes.
func keysOf(t *testing.T, s *redisstore.Store, client redis.UniversalClient, project string) buildstatus.Keys {
	t.Helper()
	id := storetest.NewBuildID()
	if _, err := s.Save(t.Context(), storetest.SampleDoc(id, project), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		found string
	)
	err := redisconn.ScanMasters(t.Context(), client, "*build:"+id, func(_ context.Context, _ redis.Cmdable, keys []string) error {
		mu.Lock()
		defer mu.Unlock()
		found = keys[len(keys)-1]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	prefix, ok := strings.CutSuffix(found, "build:"+id)
	if !ok {
		t.Fatalf("build key of %s not found", id)
	}
	if err := s.Delete(t.Context(), id, ""); err != nil {
		t.Fatal(err)
	}
	return buildstatus.Keys{Prefix: prefix}
}

func TestListProject_HostileProjectIDNeverWidensPattern(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		s := mustNew(t, client, time.Hour)
		victim := storetest.NewBuildID()
		if _, err := s.Save(ctx, storetest.SampleDoc(victim, "victim"), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, hostile := range []string{"*", "?ictim", "[v]ictim", "vic*", "victim:builds", "{victim}", `\*`, "victim\\"} {
			page, err := s.ListProject(ctx, hostile, "", 100)
			if err != nil {
				t.Fatalf("ListProject(%q): %v", hostile, err)
			}
			if len(page.Builds) != 0 {
				t.Fatalf("ListProject(%q) leaked %d builds of another project", hostile, len(page.Builds))
			}
		}
		// A hostile project's own builds are listed, and the build-key SCAN is unaffected.
		id := storetest.NewBuildID()
		if _, err := s.Save(ctx, storetest.SampleDoc(id, "*"), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		page, err := s.ListProject(ctx, "*", "", 100)
		if err != nil || len(page.Builds) != 1 || page.Builds[0].MustDoc().BuildID != id {
			t.Fatalf("ListProject(*) = %v, %v", page, err)
		}
	})
}

func TestList_SkipsForeignKeysMatchingThePattern(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		s := mustNew(t, client, time.Hour)
		keys := keysOf(t, s, client, "p")
		id := storetest.NewBuildID()
		if _, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{keys.Build("not-a-uuid"), keys.Build(strings.ToUpper(id)), keys.Build(id) + "x"} {
			if err := client.Set(ctx, k, "{}", time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		cursor := ""
		for {
			page, err := s.List(ctx, cursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Builds {
				got = append(got, b.MustDoc().BuildID)
			}
			if cursor = page.Cursor; cursor == "" {
				break
			}
		}
		if len(got) != 1 || got[0] != id {
			t.Fatalf("List = %v, want only %s", got, id)
		}
	})
}

func TestListProject_ManyEqualScoresPageExactly(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		s := mustNew(t, client, time.Hour)
		want := map[string]bool{}
		for range 57 {
			id := storetest.NewBuildID()
			want[id] = true
			if _, err := s.Save(ctx, storetest.SampleDoc(id, "same-time"), buildstatus.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		cursor := ""
		for {
			page, err := s.ListProject(ctx, "same-time", cursor, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Builds {
				got = append(got, b.MustDoc().BuildID)
			}
			if cursor = page.Cursor; cursor == "" {
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("listed %d builds, want %d", len(got), len(want))
		}
		for i, id := range got {
			if !want[id] {
				t.Fatalf("unexpected or repeated build %s", id)
			}
			delete(want, id)
			if i > 0 && got[i-1] <= id {
				t.Fatalf("order broken at %d: %s then %s", i, got[i-1], id)
			}
		}
	})
}

func TestListProject_PrunesStaleIndexEntries(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		s := mustNew(t, client, time.Hour)
		keys := keysOf(t, s, client, "prune")
		var ids []string
		for range 6 {
			id := storetest.NewBuildID()
			ids = append(ids, id)
			if _, err := s.Save(ctx, storetest.SampleDoc(id, "prune"), buildstatus.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Simulate expiry: remove build keys behind the store's back.
		for _, id := range ids[:4] {
			if err := client.Del(ctx, keys.Build(id)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		page, err := s.ListProject(ctx, "prune", "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Builds) != 1 || page.Cursor == "" {
			t.Fatalf("first page: %d builds, cursor %q", len(page.Builds), page.Cursor)
		}
		page, err = s.ListProject(ctx, "prune", page.Cursor, 1)
		if err != nil || len(page.Builds) != 1 || page.Cursor != "" {
			t.Fatalf("second page: %v, %v", page, err)
		}
		var members int64
		for _, id := range ids {
			key := keys.ProjectIndex("prune")
			if redisconn.IsCluster(client) {
				key = keys.ProjectShard("prune", id)
			}
			if n, err := client.ZScore(ctx, key, id).Result(); err == nil && n != 0 {
				members++
			}
		}
		if members != 2 {
			t.Fatalf("%d index members left, want the 2 live builds", members)
		}
	})
}

func TestUpdatePlatform_ConcurrentPlatformsNoLostUpdate(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		s := mustNew(t, client, time.Hour)
		id := storetest.NewBuildID()
		if _, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		const n = 50
		updatePlatformsConcurrently(t, s, id, n)
		b, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if b.MustDoc().PlatformResults[fmt.Sprintf("p%d", i)] == nil {
				t.Fatalf("platform p%d lost", i)
			}
		}
	})
}

func TestWatch_DeliversSaveAndDelete(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx, cancel := context.WithCancel(t.Context())
		s := mustNew(t, client, time.Hour)
		id := storetest.NewBuildID()
		events, err := s.Watch(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
		ev := next(t, events)
		if ev.Type != buildstatus.EventSaved || ev.ETag != b.ETag() || string(ev.Build) != string(b.JSON) || ev.BuildID != id {
			t.Fatalf("first event %+v", ev)
		}
		if ev = next(t, events); ev.Type != buildstatus.EventDeleted || ev.BuildID != id {
			t.Fatalf("second event %+v", ev)
		}
		cancel()
		for range events {
		}
	})
}

func next(t *testing.T, events <-chan buildstatus.Event) buildstatus.Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return buildstatus.Event{}
}

func TestStore_UnreachableRedisIsUnavailable(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	s := mustNew(t, client, time.Hour)
	if err := s.Ping(t.Context()); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Ping: %v, want %s", err, redstate.EUNAVAILABLE)
	}
	if _, err := s.Get(t.Context(), storetest.NewBuildID()); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Get: %v, want %s", err, redstate.EUNAVAILABLE)
	}
	if _, err := s.Save(t.Context(), storetest.SampleDoc("", ""), buildstatus.SaveOptions{}); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Save: %v, want %s", err, redstate.EUNAVAILABLE)
	}
}

func TestNew_RejectsBadOptions(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	if _, err := redisstore.New(client, redisstore.Options{TTL: time.Microsecond}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("TTL 1µs: %v", err)
	}
	if _, err := redisstore.New(nil, redisstore.Options{}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("nil client: %v", err)
	}
}

// countingHook counts round trips: one per command, one per pipeline.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

func TestStore_StandaloneRoundTrips(t *testing.T) {
	srv := redistest.SharedStandalone(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = client.Close() })
	hook := &countingHook{}
	client.AddHook(hook)
	ctx := t.Context()
	s := mustNew(t, client, time.Hour)
	// Load every script once (the first EVALSHA of a script meets NOSCRIPT and falls back to EVAL).
	warm := storetest.NewBuildID()
	if _, err := s.Save(ctx, storetest.SampleDoc(warm, "rt"), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListProject(ctx, "rt", "", 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, warm, ""); err != nil {
		t.Fatal(err)
	}
	id := storetest.NewBuildID()
	for _, tc := range []struct {
		name string
		want int64
		op   func() error
	}{
		{"Save", 1, func() error {
			_, err := s.Save(ctx, storetest.SampleDoc(id, "rt"), buildstatus.SaveOptions{})
			return err
		}},
		{"Get", 1, func() error { _, err := s.Get(ctx, id); return err }},
		{"GetMany", 1, func() error {
			_, err := s.GetMany(ctx, []string{id, storetest.NewBuildID(), storetest.NewBuildID()})
			return err
		}},
		{"Exists", 1, func() error { _, err := s.Exists(ctx, id); return err }},
		{"TTL", 1, func() error { _, err := s.TTL(ctx, id); return err }},
		{"UpdatePlatform", 2, func() error {
			_, err := s.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "ios", Status: "SUCCESS"}, "")
			return err
		}},
		{"ListProject", 2, func() error { _, err := s.ListProject(ctx, "rt", "", 10); return err }},
		{"List", 2, func() error { _, err := s.List(ctx, "", 10); return err }},
		{"Delete", 2, func() error { return s.Delete(ctx, id, "") }},
	} {
		before := hook.n.Load()
		if err := tc.op(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := hook.n.Load() - before; got != tc.want {
			t.Errorf("%s took %d round trips, want %d", tc.name, got, tc.want)
		}
	}
}

// BenchmarkStandalone compares the store with the raw commands it replaces, 16 clients.
func BenchmarkStandalone(b *testing.B) {
	srv := redistest.SharedStandalone(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 32})
	b.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	keys := buildstatus.NewKeys(redstate.Prefix("bench-", ""))
	s, err := redisstore.New(client, redisstore.Options{Keys: keys, TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	id := storetest.NewBuildID()
	doc := storetest.SampleDoc(id, "bench")
	raw, _ := buildstatus.Encode(doc)
	if _, err := s.Save(ctx, doc, buildstatus.SaveOptions{}); err != nil {
		b.Fatal(err)
	}
	run := func(name string, op func() error) {
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(16 / max(1, runtimeProcs()))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	run("RawGET", func() error { return client.Get(ctx, keys.Build(id)).Err() })
	run("Get", func() error { _, err := s.Get(ctx, id); return err })
	run("RawSET", func() error { return client.Set(ctx, keys.Build(id), raw, time.Hour).Err() })
	run("Save", func() error { _, err := s.Save(ctx, doc, buildstatus.SaveOptions{}); return err })
	ids := make([]string, buildstatus.MaxBatch)
	bkeys := make([]string, len(ids))
	for i := range ids {
		ids[i] = storetest.NewBuildID()
		bkeys[i] = keys.Build(ids[i])
		if _, err := s.Save(ctx, storetest.SampleDoc(ids[i], "bench"), buildstatus.SaveOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	run("RawMGET1000", func() error { return client.MGet(ctx, bkeys...).Err() })
	run("GetMany1000", func() error { _, err := s.GetMany(ctx, ids); return err })
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// TestStore_CanceledContextErrorIsRedstateError: the contract says every error is a
// *redstate.Error; a caller's canceled context must not leak out of the coalescer as a bare
// context.Canceled (which the HTTP layer would answer as 500 internal).
func TestStore_CanceledContextErrorIsRedstateError(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	s := mustNew(t, client, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	id := storetest.NewBuildID()
	for range 200 {
		var re *redstate.Error
		if _, err := s.Get(ctx, id); err != nil && !errors.As(err, &re) {
			t.Fatalf("Get with a canceled context: %T %v has no redstate code", err, err)
		}
		if _, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil && !errors.As(err, &re) {
			t.Fatalf("Save with a canceled context: %T %v has no redstate code", err, err)
		}
	}
}

// TestStore_ClusterGetManyRoundsPerNode: on Cluster, GetMany groups the keys by master before
// chunking, so 1,000 ids on 3 masters take one pipeline per round of at most 100 keys per node
// (4 or 5 rounds: about 333 keys per master), not one per 100 ids spread over every node (10).
func TestStore_ClusterGetManyRoundsPerNode(t *testing.T) {
	client := redistest.SharedCluster(t).Client(t)
	hook := &countingHook{}
	client.AddHook(hook)
	s := mustNew(t, client, time.Hour)
	ids := make([]string, buildstatus.MaxBatch)
	for i := range ids {
		ids[i] = storetest.NewBuildID()
	}
	before := hook.n.Load()
	if _, err := s.GetMany(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	if got := hook.n.Load() - before; got < 4 || got > 5 {
		t.Errorf("GetMany of %d ids on 3 masters took %d pipelines, want 4 or 5", len(ids), got)
	}
}
