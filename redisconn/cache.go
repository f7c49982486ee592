package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/redact"
	"github.com/redstate/redstate/internal/rediserr"
)

// Cache serves designated reads from process memory that Redis keeps current: server-assisted
// client-side caching (RESP3 CLIENT TRACKING in OPTIN mode) through github.com/redis/rueidis,
// on every topology go-redis serves (standalone, Sentinel, Cluster, TLS). Only the reads a
// block routes here are cached; every write, script and conditional read stays on the
// go-redis client (docs/architecture.md "Client-side cache").
//
// Guarantees:
//   - a cached value is dropped when Redis reports the key changed; the report is
//     asynchronous, so another process's write becomes visible here after the invalidation
//     delay (measured by `redstate-bench buildstatus --mode staleness`);
//   - a key this process wrote (Wrote) is read from Redis for OwnWriteWindow afterwards, so
//     the process reads its own acknowledged writes;
//   - when the connection that receives invalidations drops, its whole cache is dropped with
//     it (rueidis ties each cache to its connection), so an outage never leaves stale entries;
//   - memory is bounded by Size bytes per node; an entry expires after TTL or with its key.
//
// A Cache is safe for concurrent use.
type Cache struct {
	opts CacheOptions
	// conn connects to Redis on first use and again after a failed attempt (see client).
	conn   cacheConn
	hits   atomic.Int64
	misses atomic.Int64
	// bypassed counts reads sent to Redis because this process wrote the key recently.
	bypassed atomic.Int64
	// invalidations counts the keys Redis reported changed (a flush counts one).
	invalidations atomic.Int64
	// onInvalidate, when set, is called with each invalidated key ("" for a flush).
	onInvalidate atomic.Pointer[func(key string)]
	// written maps a key this process wrote to the UnixNano time it was last marked.
	written   sync.Map
	nWritten  atomic.Int64
	lastPrune atomic.Int64
	// turns makes batch reads answered from memory take turns on the CPUs (readMany).
	turns *batchTurns
}

// ReadCache is the client-side cache as the Redis backends read through it (build status,
// the CDC index, feed pages); *Cache implements it, and a test may put its own in its place.
// Each method is the one of Cache with the same name.
type ReadCache interface {
	// Get returns the value of a String key, nil when it does not exist.
	Get(ctx context.Context, key string) ([]byte, error)
	// MGet returns the values of String keys in order, nil for a missing key.
	MGet(ctx context.Context, keys []string) ([][]byte, error)
	// HGetAll returns the fields of a Hash key (empty when it does not exist).
	HGetAll(ctx context.Context, key string) (map[string]string, error)
	// HGetAllMany is HGetAll of each key, in order.
	HGetAllMany(ctx context.Context, keys []string) ([]map[string]string, error)
	// ZRevRangeByScoreWithScores returns up to count members of a Sorted Set from max down to
	// min, with their scores.
	ZRevRangeByScoreWithScores(ctx context.Context, key, max, min string, count int64) ([]redis.Z, error)
	// Sync returns once the invalidations of every write acknowledged before the call have
	// reached the cache.
	Sync(ctx context.Context) error
	// Wrote marks keys this process is writing or has written, so its next reads of them
	// skip the cache.
	Wrote(keys ...string)
}

var _ ReadCache = (*Cache)(nil)

// CacheStats are a Cache's counters since it was made.
type CacheStats struct {
	// Hits are reads answered from process memory.
	Hits int64
	// Misses are cacheable reads that went to Redis (and cached the answer).
	Misses int64
	// Bypassed are reads of recently written keys sent to Redis uncached.
	Bypassed int64
	// Invalidations are the keys Redis reported changed (a whole-cache flush counts one).
	Invalidations int64
}

// NewCache returns the client-side cache for the topology o selects, or nil when
// o.ClientCache is off. Like New it does not connect: the first read dials, and a read while
// Redis is unreachable fails with EUNAVAILABLE and dials again on the next read (at most once
// per second). Errors: EINVALID for options rueidis cannot use.
func NewCache(o Options) (*Cache, error) {
	if !o.ClientCache.Enabled {
		return nil, nil
	}
	copts := o.ClientCache.withDefaults()
	opt, err := rueidisOptions(o, copts)
	if err != nil {
		return nil, err
	}
	c := &Cache{opts: copts, conn: cacheConn{opt: opt, describe: Describe(o)}, turns: newBatchTurns()}
	c.conn.opt.OnInvalidations = c.invalidated
	return c, nil
}

// invalidated is rueidis's OnInvalidations: it runs after the keys were dropped from the
// cache, on the connection's reading goroutine (so it must be quick).
func (c *Cache) invalidated(keys []rueidis.RedisMessage) {
	hook := c.onInvalidate.Load()
	if keys == nil {
		c.invalidations.Add(1)
		if hook != nil {
			(*hook)("")
		}
		return
	}
	c.invalidations.Add(int64(len(keys)))
	if hook == nil {
		return
	}
	for _, k := range keys {
		if s, err := k.ToString(); err == nil {
			(*hook)(s)
		}
	}
}

// OnInvalidate makes f receive every key Redis reports changed, right after it was dropped
// from the cache ("" when the whole cache was flushed); nil stops it. f runs on the goroutine
// that reads invalidations, so it must not block. For measurements (the staleness bench).
func (c *Cache) OnInvalidate(f func(key string)) {
	if f == nil {
		c.onInvalidate.Store(nil)
		return
	}
	c.onInvalidate.Store(&f)
}

// cacheConn makes the cache's rueidis client, which dials when it is made, on first use.
type cacheConn struct {
	opt      rueidis.ClientOption
	describe string
	ready    atomic.Pointer[rueidis.Client]
	mu       sync.Mutex
	closed   bool
	failedAt time.Time
	lastErr  error
}

// redialEvery is the least time between two failed attempts to make the client.
const redialEvery = time.Second

// client returns the rueidis client, making it on first call. Errors: EUNAVAILABLE.
func (c *cacheConn) client() (rueidis.Client, error) {
	if cl := c.ready.Load(); cl != nil {
		return *cl, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.ready.Load(); cl != nil {
		return *cl, nil
	}
	if c.closed {
		return nil, redstate.Errorf(redstate.EUNAVAILABLE, "redisconn: the client-side cache is closed")
	}
	if !c.failedAt.IsZero() && time.Since(c.failedAt) < redialEvery {
		return nil, redstate.Wrap(redstate.EUNAVAILABLE, c.lastErr, "client-side cache: Redis is unavailable ("+c.describe+")")
	}
	cl, err := rueidis.NewClient(c.opt)
	if err != nil {
		c.failedAt, c.lastErr = time.Now(), err
		return nil, redstate.Wrap(redstate.EUNAVAILABLE, err, "client-side cache: Redis is unavailable ("+c.describe+")")
	}
	c.ready.Store(&cl)
	return cl, nil
}

// close closes the client if it was made; later calls of client fail.
func (c *cacheConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if cl := c.ready.Swap(nil); cl != nil {
		(*cl).Close()
	}
}

// rueidisOptions maps o onto rueidis's options: the same addresses, credentials, TLS and
// timeouts as New's go-redis client, one tracked connection per node.
func rueidisOptions(o Options, c CacheOptions) (rueidis.ClientOption, error) {
	opt := rueidis.ClientOption{
		ClientName:        clientName() + "-cache",
		Username:          o.Username,
		Password:          o.Password,
		CacheSizeEachConn: c.Size,
		// One connection per node: one cache per node, so Size bounds it, and every
		// invalidation of a key reaches the only copy.
		PipelineMultiplex: -1,
		ConnWriteTimeout:  max(o.ReadTimeout, o.WriteTimeout, time.Second),
	}
	opt.Dialer.Timeout = o.DialTimeout
	switch topology(o) {
	case "url":
		u, err := url.Parse(o.URL)
		if err != nil {
			return opt, redstate.Errorf(redstate.EINVALID, "redisconn: redis.url %s: %v", redact.URL(o.URL), err)
		}
		parsed, err := rueidis.ParseURL(o.URL)
		if err != nil {
			return opt, redstate.Errorf(redstate.EINVALID, "redisconn: redis.url %s: %v", redact.URL(o.URL), err)
		}
		opt.InitAddress, opt.SelectDB, opt.ForceSingleClient = parsed.InitAddress, parsed.SelectDB, true
		if o.Username == "" {
			opt.Username = parsed.Username
		}
		if o.Password == "" {
			opt.Password = parsed.Password
		}
		if u.Scheme == "rediss" || o.TLS {
			opt.TLSConfig = tlsConfig(u.Host)
		}
	case "cluster":
		// A copy: rueidis shuffles InitAddress in place, and o.ClusterAddrs is the go-redis
		// client's seed list too (a data race, and a reordered configuration).
		opt.InitAddress = slices.Clone(o.ClusterAddrs)
		opt.ShuffleInit = true
		if o.TLS {
			opt.TLSConfig = tlsConfig("")
		}
	case "sentinel":
		opt.InitAddress = slices.Clone(o.Sentinel.Addrs)
		opt.Sentinel = rueidis.SentinelOption{MasterSet: o.Sentinel.MasterName, Password: o.Sentinel.Password,
			Dialer: opt.Dialer, TopologyRefreshInterval: 5 * time.Second}
		if o.TLS {
			opt.TLSConfig = tlsConfig("")
			opt.Sentinel.TLSConfig = opt.TLSConfig
		}
	default:
		return opt, redstate.Errorf(redstate.EINVALID, "redisconn: the client-side cache needs exactly one Redis topology (%s)", Describe(o))
	}
	if err := trustCA(opt.TLSConfig, o.TLSCAFile); err != nil {
		return opt, err
	}
	return opt, nil
}

// Get returns the value of the String key, nil when it does not exist (a cached answer too).
// Errors: EUNAVAILABLE, EINTERNAL (a reply other than a string, e.g. WRONGTYPE).
func (c *Cache) Get(ctx context.Context, key string) ([]byte, error) {
	r, err := c.read(ctx, key, func(b rueidis.Builder) rueidis.Cacheable { return b.Get().Key(key).Cache() })
	if err != nil {
		return nil, err
	}
	v, err := r.AsBytes()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, mapCacheErr(err, "reading "+key)
	}
	return v, nil
}

// read sends the read cmd builds for key: through the cache, or straight to Redis (counted as
// bypassed) when this process wrote key within OwnWriteWindow. Errors: EUNAVAILABLE when no
// connection can be made; the reply's own error is left in the result.
func (c *Cache) read(ctx context.Context, key string, cmd func(rueidis.Builder) rueidis.Cacheable) (rueidis.RedisResult, error) {
	cl, err := c.conn.client()
	if err != nil {
		return rueidis.RedisResult{}, err
	}
	if c.ownWrite(key) {
		c.bypassed.Add(1)
		return cl.Do(ctx, rueidis.Completed(cmd(cl.B()))), nil
	}
	r := cl.DoCache(ctx, cmd(cl.B()), c.opts.TTL)
	c.count(r)
	return r, nil
}

// MGet returns the values of the String keys in order, nil for a missing key: one GET per key,
// cached ones answered from memory and the rest sent together (one round trip per node).
// Errors: as Get.
func (c *Cache) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	err := c.readMany(ctx, keys, func(b rueidis.Builder, k string) rueidis.Cacheable { return b.Get().Key(k).Cache() },
		func(i int, r rueidis.RedisResult) error {
			v, err := r.AsBytes()
			if rueidis.IsRedisNil(err) {
				return nil
			}
			out[i] = v
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// HGetAll returns the fields of the Hash key (empty when it does not exist). Errors: as Get.
func (c *Cache) HGetAll(ctx context.Context, key string) (map[string]string, error) {
	r, err := c.read(ctx, key, func(b rueidis.Builder) rueidis.Cacheable { return b.Hgetall().Key(key).Cache() })
	if err != nil {
		return nil, err
	}
	m, err := r.AsStrMap()
	if err != nil {
		return nil, mapCacheErr(err, "reading "+key)
	}
	return m, nil
}

// ZRevRangeByScoreWithScores returns up to count members of the Sorted Set key with scores
// from max down to min (ZRANGE key max min BYSCORE REV LIMIT 0 count WITHSCORES; max and min
// in ZRANGEBYSCORE syntax), highest first. Errors: as Get.
func (c *Cache) ZRevRangeByScoreWithScores(ctx context.Context, key, max, min string, count int64) ([]redis.Z, error) {
	r, err := c.read(ctx, key, func(b rueidis.Builder) rueidis.Cacheable {
		return b.Zrevrangebyscore().Key(key).Max(max).Min(min).Withscores().Limit(0, count).Cache()
	})
	if err != nil {
		return nil, err
	}
	zs, err := r.AsZScores()
	if err != nil {
		return nil, mapCacheErr(err, "reading "+key)
	}
	out := make([]redis.Z, len(zs))
	for i, z := range zs {
		out[i] = redis.Z{Score: z.Score, Member: z.Member}
	}
	return out, nil
}

// HGetAllMany is HGetAll of each key, in order, cached ones answered from memory and the rest
// sent together (one round trip per node). Errors: as Get.
func (c *Cache) HGetAllMany(ctx context.Context, keys []string) ([]map[string]string, error) {
	out := make([]map[string]string, len(keys))
	err := c.readMany(ctx, keys, func(b rueidis.Builder, k string) rueidis.Cacheable { return b.Hgetall().Key(k).Cache() },
		func(i int, r rueidis.RedisResult) (err error) {
			out[i], err = r.AsStrMap()
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readMany sends the read cmd builds for each key, through the cache or, for the keys this
// process just wrote, straight to Redis, each kind in one DoMulti, and hands every reply to put
// with its key's index; an error put returns is mapped and ends the read. While batches are
// answered from memory they take turns (batchTurns).
func (c *Cache) readMany(ctx context.Context, keys []string, cmd func(rueidis.Builder, string) rueidis.Cacheable,
	put func(int, rueidis.RedisResult) error) error {
	cl, err := c.conn.client()
	if err != nil {
		return err
	}
	done, err := c.turns.take(ctx)
	if err != nil {
		return mapCacheErr(err, fmt.Sprintf("waiting for a turn to read %d keys", len(keys)))
	}
	defer done()
	viaCache := make([]rueidis.CacheableTTL, 0, len(keys))
	viaCacheAt := make([]int, 0, len(keys))
	var toRedis rueidis.Commands
	var toRedisAt []int
	for i, k := range keys {
		if c.ownWrite(k) {
			toRedis = append(toRedis, rueidis.Completed(cmd(cl.B(), k)))
			toRedisAt = append(toRedisAt, i)
			continue
		}
		viaCache = append(viaCache, rueidis.CT(cmd(cl.B(), k), c.opts.TTL))
		viaCacheAt = append(viaCacheAt, i)
	}
	if len(viaCache) > 0 {
		hits := 0
		for j, r := range cl.DoMultiCache(ctx, viaCache...) {
			if c.count(r) {
				hits++
			}
			if err := put(viaCacheAt[j], r); err != nil {
				return mapCacheErr(err, "reading "+keys[viaCacheAt[j]])
			}
		}
		c.turns.record(hits, len(keys))
	}
	if len(toRedis) > 0 {
		c.bypassed.Add(int64(len(toRedis)))
		for j, r := range cl.DoMulti(ctx, toRedis...) {
			if err := put(toRedisAt[j], r); err != nil {
				return mapCacheErr(err, "reading "+keys[toRedisAt[j]])
			}
		}
	}
	return nil
}

// Sync returns once every invalidation Redis sent this cache before the call has been
// applied: one PING per node on the tracked connection, whose reply Redis queues after those
// invalidations. After a write through another client is acknowledged, Sync makes this
// process's cached reads see it: the barrier for writes whose keys are only known inside a
// script. Errors: EUNAVAILABLE.
func (c *Cache) Sync(ctx context.Context) error {
	cl, err := c.conn.client()
	if err != nil {
		return err
	}
	nodes := cl.Nodes()
	errs := make(chan error, len(nodes))
	for addr, node := range nodes {
		go func() {
			if err := node.Do(ctx, node.B().Ping().Build()).Error(); err != nil {
				errs <- mapCacheErr(err, "syncing the client-side cache with "+addr)
				return
			}
			errs <- nil
		}()
	}
	var all []error
	for range nodes {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// Wrote records that this process is writing or has just written keys: reads of them skip
// the cache for OwnWriteWindow. Call it before the write (so reads racing the write skip the
// cache) and again once it is acknowledged (so the window starts at the acknowledgement).
func (c *Cache) Wrote(keys ...string) {
	now := time.Now().UnixNano()
	for _, k := range keys {
		if _, loaded := c.written.Swap(k, now); !loaded {
			c.nWritten.Add(1)
		}
	}
	c.prune(now)
}

// ownWrite reports whether this process wrote key within OwnWriteWindow.
func (c *Cache) ownWrite(key string) bool {
	if c.nWritten.Load() == 0 {
		return false
	}
	at, ok := c.written.Load(key)
	return ok && time.Now().UnixNano()-at.(int64) < int64(c.opts.OwnWriteWindow)
}

// prune forgets, at most once per OwnWriteWindow, the writes older than the window.
func (c *Cache) prune(now int64) {
	window := int64(c.opts.OwnWriteWindow)
	last := c.lastPrune.Load()
	if now-last < window || !c.lastPrune.CompareAndSwap(last, now) {
		return
	}
	c.written.Range(func(k, at any) bool {
		if now-at.(int64) >= window && c.written.CompareAndDelete(k, at) {
			c.nWritten.Add(-1)
		}
		return true
	})
}

// count adds r to the hit or miss counter and reports whether it was a hit.
func (c *Cache) count(r rueidis.RedisResult) bool {
	if r.Error() != nil && !rueidis.IsRedisNil(r.Error()) {
		return false
	}
	if r.IsCacheHit() {
		c.hits.Add(1)
		return true
	}
	c.misses.Add(1)
	return false
}

// Stats returns the counters.
func (c *Cache) Stats() CacheStats {
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Bypassed: c.bypassed.Load(), Invalidations: c.invalidations.Load()}
}

// Options returns the cache's options with defaults applied.
func (c *Cache) Options() CacheOptions { return c.opts }

// Close closes the cache's connections and drops every cached value.
func (c *Cache) Close() error {
	c.conn.close()
	return nil
}

// mapCacheErr maps a rueidis error the way rediserr.Map maps go-redis's: retryable and refused
// error replies and transport failures are EUNAVAILABLE, other error replies EINTERNAL.
func mapCacheErr(err error, op string) error {
	var reply *rueidis.RedisError
	if errors.As(err, &reply) {
		msg := reply.Error()
		switch {
		case rediserr.Retryable(msg):
			return rediserr.Unavailable(err, op)
		case rediserr.Refused(msg):
			return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": Redis refused the command (check the ACL user's permissions and credentials)")
		case strings.HasPrefix(msg, "ERR unknown command") || strings.Contains(msg, "CLIENT TRACKING"):
			return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": the server does not support client-side caching (Redis 6 or later with RESP3); turn redis.client-cache.enabled off")
		}
		return redstate.Wrap(redstate.EINTERNAL, err, fmt.Sprintf("%s: unexpected Redis reply", op))
	}
	return rediserr.Unavailable(err, op)
}

// String describes the cache's settings for logs ("off" for a nil cache).
func (c *Cache) String() string {
	if c == nil {
		return CacheOptions{}.String()
	}
	return c.opts.String()
}
