// Package redisstore is the Redis backend of buildstatus.Store. The same code runs on a
// standalone server, behind Sentinel (a failover *redis.Client) and on Redis Cluster.
//
// Layout (all names come from buildstatus.Keys):
//
//   - a build is the String keys.Build(id) holding exactly buildstatus.Encode's JSON, with a
//     PX TTL; its ETag is the SHA-1 hex of those bytes, which the Lua scripts compute with
//     redis.sha1hex to make conditional writes atomic;
//   - standalone/Sentinel: a project's index is the sorted set keys.ProjectIndex(project),
//     score buildstatus.ProjectScore, member the build id;
//   - Cluster: the build key carries no hash tag (the seed fixes its name), so the index is
//     sharded per slot: keys.ProjectShard(project, id) lives in the build key's slot and is
//     written by the same script as the build; the set keys.ProjectShards(project) lists the
//     slots holding shards and is extended before every save, so it is always a superset;
//   - changes are published on keys.Events(id) from inside the write scripts (see watch.go).
//
// Every atomic step is one Lua script (scripts.go) whose keys all share one slot; no key is
// ever built inside Lua.
package redisstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/coalesce"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/redisconn"
)

var _ buildstatus.Store = (*Store)(nil)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Keys builds every key and channel name. Zero value: buildstatus.NewKeys(redstate.KeyPrefix{}), the
	// seed's "ingenio:publish:" layout with no namespace.
	Keys buildstatus.Keys
	// TTL is the lifetime a save gives a build. Zero: buildstatus.DefaultTTL (30 days).
	// It must be at least one millisecond.
	TTL time.Duration
	// Now is the clock used for updatedAt and for the project score of builds without
	// createdAt. Nil: time.Now.
	Now func() time.Time
	// Batching tunes the coalescing of concurrent Gets (batch.go). Zero value: 4 batches in
	// flight of at most 64 calls each.
	Batching coalesce.Options
	// SaveBatching tunes the coalescing of concurrent Saves (batch.go). Zero value: two batches
	// in flight of at most 64 saves each (Workers 0 means 2 here, see saveWorkers).
	SaveBatching coalesce.Options
	// DirectCalls sends every Get and Save as its own round trip instead of coalescing
	// concurrent calls (for comparison benchmarks; slower under concurrency).
	DirectCalls bool
	// Cache, when set, serves Get and GetMany from process memory that Redis invalidates
	// (redisconn.Cache, redis.client-cache). Listing, Exists, TTL and the reads of conditional
	// writes (Delete, UpdatePlatform) always read Redis. Nil: no cache.
	Cache redisconn.ReadCache
}

// Store is the Redis implementation of buildstatus.Store. It is safe for concurrent use.
type Store struct {
	client  redis.UniversalClient
	cluster *redis.ClusterClient // nil unless client is a Cluster client
	keys    buildstatus.Keys
	ttl     time.Duration
	now     func() time.Time
	batch   *batchers           // nil with Options.DirectCalls
	cache   redisconn.ReadCache // nil without Options.Cache
	hub     *hub                // the one Pub/Sub connection shared by every Watch

	// directories memoizes, on Cluster, when this process last extended a project's shard
	// directory for a slot (key: projectID + "\x00" + slot; value: time.Time).
	directories sync.Map
	// updates make this process's updates of one build take turns (UpdatePlatform).
	updates *updateQueues
	// window is the lifetime of the call markers of deletes and conditional saves (resend.Window).
	window time.Duration
}

// New returns a Store on client (call Close when done with it), which may be a *redis.Client (standalone or Sentinel
// failover) or a *redis.ClusterClient. A *redis.Ring is rejected: its keys are spread without
// slots, so the scripts' multi-key atomicity could not hold. Errors: EINVALID.
func New(client redis.UniversalClient, opts Options) (*Store, error) {
	if client == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "redisstore: a Redis client is required")
	}
	if _, ok := client.(*redis.Ring); ok {
		return nil, redstate.Errorf(redstate.EINVALID, "redisstore: redis.Ring is not supported; use a standalone, Sentinel or Cluster client")
	}
	if opts.Keys.Prefix == "" {
		opts.Keys = buildstatus.NewKeys(redstate.KeyPrefix{})
	}
	if opts.TTL == 0 {
		opts.TTL = buildstatus.DefaultTTL
	}
	if opts.TTL < time.Millisecond {
		return nil, redstate.Errorf(redstate.EINVALID, "redisstore: TTL must be at least 1ms, got %s", opts.TTL)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{
		client:  client,
		keys:    opts.Keys,
		ttl:     opts.TTL,
		now:     opts.Now,
		hub:     newHub(client),
		cache:   opts.Cache,
		updates: newUpdateQueues(),
		window:  resend.Window(client),
		cluster: redisconn.AsCluster(client),
	}
	if !opts.DirectCalls {
		s.startBatchers(opts.Batching, opts.SaveBatching)
	}
	return s, nil
}

// Ping reports whether the backend can serve requests: one PING to the server, or to every
// master on Cluster. Errors: EUNAVAILABLE.
func (s *Store) Ping(ctx context.Context) error {
	err := redisconn.ForEachMaster(ctx, s.client, func(ctx context.Context, c redis.Cmdable) error {
		return c.Ping(ctx).Err()
	})
	if err != nil {
		return unavailable(err, "ping")
	}
	return nil
}

// wrote tells the cache, if any, that this process is writing or has written keys.
func (s *Store) wrote(keys ...string) {
	if s.cache != nil {
		s.cache.Wrote(keys...)
	}
}

// indexKey is the project-index key a build's entry lives in: the single index on
// standalone, the shard in the build key's slot on Cluster.
func (s *Store) indexKey(projectID, buildID string) string {
	if s.cluster != nil {
		return s.keys.ProjectShard(projectID, buildID)
	}
	return s.keys.ProjectIndex(projectID)
}

// checkID returns EINVALID unless id is a canonical build id.
func checkID(id string) error {
	if buildstatus.IsCanonicalBuildID(id) {
		return nil
	}
	norm, err := buildstatus.NormalizeBuildID(id)
	if err != nil {
		return err
	}
	if norm != id {
		return redstate.Errorf(redstate.EINVALID, "buildId %q is not canonical (want %q)", id, norm)
	}
	return nil
}

// jitter returns a uniformly random duration in [0, limit).
func jitter(limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return rand.N(limit)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return unavailable(ctx.Err(), "waiting to retry")
	case <-t.C:
		return nil
	}
}
