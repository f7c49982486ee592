// Package redisindex is the Redis index.Store: row changes are applied by a Lua script (per row
// the version compare-and-set on the row's version key, which holds its relation, then
// HDEL/HSET and one SET), several rows a call,
// pipelined per batch. On Redis Cluster every
// key of a table must share a hash tag (index.TableSpec.HashTag) so that script runs in one
// slot.
package redisindex

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/redisconn"
)

// Store is the Redis index.Store. It is safe for concurrent use.
type Store struct {
	client  redis.UniversalClient
	cluster bool
	cache   redisconn.ReadCache // nil: queries read Redis
	window  time.Duration       // lifetime of the call markers of counters and dead letters
}

var _ index.Store = (*Store)(nil)

// New returns a Store on client.
func New(client redis.UniversalClient) *Store {
	return &Store{client: client, cluster: redisconn.IsCluster(client), window: resend.Window(client)}
}

// NewCached returns a Store on client whose Rows and RowsBatch (the queries) read through
// cache, except under index.FreshRead: a query costs no round trip while its index key is
// unchanged. Writes, Scan, Dump and Counters always use client. Apply ends with cache.Sync
// (one PING per node), so this process's queries see its own applied writes at once; another
// process's cache sees them once Redis's invalidation arrives.
func NewCached(client redis.UniversalClient, cache redisconn.ReadCache) *Store {
	s := New(client)
	s.cache = cache
	return s
}

// rowsPerScript is the most row writes one call of applyScript applies: a script call's own
// cost (about half of a row's script time in Redis 7) is paid once for them.
const rowsPerScript = 32

// Apply implements index.Store: one pipeline of scripts (one round trip per node), executed
// by Redis in order, so several writes to one row in a batch apply one after the other. One
// call applies up to rowsPerScript rows of one table in order (on Cluster every key of a table
// is in its hash tag's slot, so a call runs on one node).
func (s *Store) Apply(ctx context.Context, writes []index.RowWrite) ([]index.Outcome, error) {
	out, err := s.apply(ctx, writes)
	if err == nil && s.cache != nil && len(writes) > 0 {
		// An error here leaves the writes applied; the caller's retry finds them Stale.
		err = rediserr.Map(s.cache.Sync(ctx), "index apply: syncing the client-side cache")
	}
	return out, err
}

// apply is Apply without the cache's barrier.
func (s *Store) apply(ctx context.Context, writes []index.RowWrite) ([]index.Outcome, error) {
	calls, rows := scriptCalls(writes)
	out := make([]index.Outcome, len(writes))
	for i, cmd := range redisscript.RunPipelined(ctx, s.client, applyScript, calls) {
		ns, err := cmd.Int64Slice()
		if err == nil && len(ns) != len(rows[i]) {
			err = errors.New("unexpected reply length")
		}
		if err != nil {
			return out, rediserr.Map(err, "index apply")
		}
		for j, n := range ns {
			if n == 1 {
				out[rows[i][j]] = index.Applied
			} else {
				out[rows[i][j]] = index.Stale
			}
		}
	}
	return out, nil
}

// scriptCalls splits writes into applyScript calls of at most rowsPerScript rows of one table
// (one truncate key, so on Cluster one slot) with one version TTL, each call's rows in the
// order of writes; rows[i] holds the positions in writes of call i's rows.
func scriptCalls(writes []index.RowWrite) (calls []redisscript.Call, rows [][]int) {
	type group struct{ floorKey, ttl string }
	open := map[group]int{} // the call of each group still taking rows
	for i, w := range writes {
		g := group{w.FloorKey, ttlMillis(w.TTL)}
		c, ok := open[g]
		if !ok || len(rows[c]) == rowsPerScript {
			c = len(calls)
			open[g] = c
			calls = append(calls, redisscript.Call{Keys: []string{g.floorKey, w.LayoutKey}, Args: []any{g.ttl, w.TablePrefix}})
			rows = append(rows, nil)
		}
		appendScriptRow(&calls[c], w)
		rows[c] = append(rows[c], i)
	}
	return calls, rows
}

// appendScriptRow adds w's KEYS and ARGV to call (applyScript's layout).
func appendScriptRow(call *redisscript.Call, w index.RowWrite) {
	call.Keys = append(call.Keys, w.VersionKey)
	m := "-1"
	if !w.Delete {
		call.Keys = append(call.Keys, w.Keys...)
		m = strconv.Itoa(len(w.Keys))
	}
	call.Args = append(call.Args, m, w.ID, w.Value(), string(w.Row))
}

// ttlMillis is a TTL in whole milliseconds, at least 1, as text.
func ttlMillis(ttl time.Duration) string {
	return strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
}

// RaiseFloor implements index.Store: one script.
func (s *Store) RaiseFloor(ctx context.Context, f index.FloorWrite) (index.Outcome, error) {
	n, err := raiseFloorScript.Run(ctx, s.client, []string{f.Key}, string(f.Version), index.VersionValue(f.Version, f.Stamp), ttlMillis(f.TTL)).Int64()
	if err != nil {
		return 0, rediserr.Map(err, "index truncate")
	}
	if n == 1 {
		return index.Applied, nil
	}
	return index.Stale, nil
}

// ScanKeys implements index.Store with SCAN MATCH. On Cluster the pattern's keys share a hash
// tag (a tagged table's), so the scan runs on the master of that slot.
func (s *Store) ScanKeys(ctx context.Context, pattern, cursor string, count int) ([]string, string, error) {
	var cur uint64
	if cursor != "" {
		c, err := strconv.ParseUint(cursor, 10, 64)
		if err != nil {
			return nil, "", redstate.Errorf(redstate.EINVALID, "cursor %q is not a cursor this store returned", cursor)
		}
		cur = c
	}
	var client redis.Cmdable = s.client
	if cc := redisconn.AsCluster(s.client); cc != nil {
		master, err := cc.MasterForKey(ctx, pattern)
		if err != nil {
			return nil, "", rediserr.Map(err, "index scan")
		}
		client = master
	}
	keys, next, err := client.Scan(ctx, cur, pattern, int64(count)).Result()
	if err != nil {
		return nil, "", rediserr.Map(err, "index scan")
	}
	return keys, strconv.FormatUint(next, 10), nil
}

// Rows implements index.Store: one HGETALL, or the cached hash (NewCached).
func (s *Store) Rows(ctx context.Context, key string) (map[string]json.RawMessage, error) {
	if s.cache != nil && !index.IsFreshRead(ctx) {
		m, err := s.cache.HGetAll(ctx, key)
		if err != nil {
			return nil, rediserr.Map(err, "index query")
		}
		return rawRows(m), nil
	}
	m, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, rediserr.Map(err, "index query")
	}
	return rawRows(m), nil
}

// RowsBatch implements index.Store: one pipeline (go-redis splits it per Cluster node and
// sends the parts in parallel).
func (s *Store) RowsBatch(ctx context.Context, keys []string) ([]map[string]json.RawMessage, error) {
	if s.cache != nil && !index.IsFreshRead(ctx) {
		ms, err := s.cache.HGetAllMany(ctx, keys)
		if err != nil {
			return nil, rediserr.Map(err, "index batch query")
		}
		out := make([]map[string]json.RawMessage, len(ms))
		for i, m := range ms {
			out[i] = rawRows(m)
		}
		return out, nil
	}
	cmds, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.HGetAll(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, rediserr.Map(err, "index batch query")
	}
	out := make([]map[string]json.RawMessage, len(keys))
	for i, c := range cmds {
		out[i] = rawRows(c.(*redis.MapStringStringCmd).Val())
	}
	return out, nil
}

// Scan implements index.Store with HSCAN.
func (s *Store) Scan(ctx context.Context, key, cursor string, count int) (index.Page, error) {
	if count <= 0 {
		count = 100
	}
	var cur uint64
	if cursor != "" {
		c, err := strconv.ParseUint(cursor, 10, 64)
		if err != nil {
			return index.Page{}, redstate.Errorf(redstate.EINVALID, "cursor %q is not a cursor this store returned", cursor)
		}
		cur = c
	}
	kv, next, err := s.client.HScan(ctx, key, cur, "", int64(count)).Result()
	if err != nil {
		return index.Page{}, rediserr.Map(err, "index scan")
	}
	page := index.Page{Rows: map[string]json.RawMessage{}, Cursor: strconv.FormatUint(next, 10)}
	for i := 0; i+1 < len(kv); i += 2 {
		page.Rows[kv[i]] = json.RawMessage(kv[i+1])
	}
	return page, nil
}

// Dump implements index.Store: SCAN pattern on every master, then the values.
func (s *Store) Dump(ctx context.Context, pattern string) (map[string]string, error) {
	if _, ok := s.client.(*redis.Client); !ok && !s.cluster {
		return nil, redstate.Errorf(redstate.EINVALID, "index dump: unsupported client type %T", s.client)
	}
	var (
		keys   []string
		keysMu sync.Mutex
	)
	err := redisconn.ScanMasters(ctx, s.client, pattern, func(_ context.Context, _ redis.Cmdable, found []string) error {
		keysMu.Lock()
		keys = append(keys, found...)
		keysMu.Unlock()
		return nil
	})
	if err != nil {
		return nil, rediserr.Map(err, "index dump")
	}
	out := make(map[string]string, len(keys))
	for start := 0; start < len(keys); start += dumpChunk {
		if err := s.dumpChunk(ctx, keys[start:min(start+dumpChunk, len(keys))], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dumpChunk is the number of keys Dump reads per pair of pipelines.
const dumpChunk = 1000

// dumpChunk reads the types of keys in one pipeline, then their values in another.
func (s *Store) dumpChunk(ctx context.Context, keys []string, out map[string]string) error {
	types, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Type(ctx, k)
		}
		return nil
	})
	if err != nil {
		return rediserr.Map(err, "index dump")
	}
	values, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			switch types[i].(*redis.StatusCmd).Val() {
			case "string":
				p.Get(ctx, k)
			case "hash":
				p.HGetAll(ctx, k)
			case "list":
				p.LLen(ctx, k)
			default:
				p.Exists(ctx, k)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return rediserr.Map(err, "index dump")
	}
	for i, k := range keys {
		switch c := values[i].(type) {
		case *redis.StringCmd:
			if v, err := c.Result(); err == nil {
				out[k] = "string:" + v
			}
		case *redis.MapStringStringCmd:
			if m := c.Val(); len(m) > 0 {
				out[k] = index.CanonicalHash(rawRows(m))
			}
		case *redis.IntCmd:
			if t := types[i].(*redis.StatusCmd).Val(); t == "list" {
				out[k] = "list:" + strconv.FormatInt(c.Val(), 10)
			} else if t != "none" && c.Val() > 0 {
				out[k] = t + ":"
			}
		}
	}
	return nil
}

// DeadLetter implements index.Store: deadLetterScript, once per call (a copy go-redis sends
// again pushes nothing).
func (s *Store) DeadLetter(ctx context.Context, key string, entry []byte, max int) error {
	m := resend.NewMarker(key+":once:", key, s.window)
	return rediserr.Map(deadLetterScript.Run(ctx, s.client, m.Keys(key), m.Args(string(entry), max)...).Err(), "index dead letter")
}

// rawRows converts a reply without copying the values: each json.RawMessage shares the
// memory of the reply's string (go-redis allocates it per reply and never reuses it). Callers
// must not modify the returned rows (the index.Store contract).
func rawRows(m map[string]string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for f, v := range m {
		out[f] = json.RawMessage(unsafe.Slice(unsafe.StringData(v), len(v)))
	}
	return out
}

// Remove implements index.Store (then cache.Sync, as Apply).
func (s *Store) Remove(ctx context.Context, key, id string) error {
	if err := s.client.HDel(ctx, key, id).Err(); err != nil {
		return rediserr.Map(err, "index remove")
	}
	if s.cache != nil {
		return rediserr.Map(s.cache.Sync(ctx), "index remove: syncing the client-side cache")
	}
	return nil
}

// AddCounters implements index.Store: countersScript (HINCRBY per field), once per call. A
// MULTI, as it was, is not re-sent by go-redis, but it fails when Redis answers too late even
// though it was applied, and the caller adds the counts again with its next flush; the script
// is re-sent and its copy answers as the first run did.
func (s *Store) AddCounters(ctx context.Context, key string, c index.CounterSet) error {
	fields := index.CounterFields(c)
	if len(fields) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(fields))
	for f, n := range fields {
		args = append(args, f, n)
	}
	m := resend.NewMarker(key+":once:", key, s.window)
	return rediserr.Map(countersScript.Run(ctx, s.client, m.Keys(key), m.Args(args...)...).Err(), "index counters")
}

// Counters implements index.Store: one HGETALL.
func (s *Store) Counters(ctx context.Context, key string) (index.CounterSet, error) {
	m, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		return index.CounterSet{}, rediserr.Map(err, "index counters")
	}
	fields := make(map[string]int64, len(m))
	for f, v := range m {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			fields[f] = n
		}
	}
	return index.ParseCounterFields(fields), nil
}

// migrateRowsPerScript is the most rows one call of migrateScript moves.
const migrateRowsPerScript = 64

// MigrateRows implements index.Store: migrateScript, up to migrateRowsPerScript rows a call,
// pipelined (on Cluster the rows of a tagged table share its slot).
func (s *Store) MigrateRows(ctx context.Context, m index.LayoutMigration) (int, error) {
	var calls []redisscript.Call
	for start := 0; start < len(m.RelationKeys); start += migrateRowsPerScript {
		call := redisscript.Call{Args: []any{m.TablePrefix, m.Stamp}}
		for i := start; i < min(start+migrateRowsPerScript, len(m.RelationKeys)); i++ {
			call.Keys = append(call.Keys, m.VersionKeys[i], m.RelationKeys[i])
		}
		calls = append(calls, call)
	}
	moved := 0
	for _, cmd := range redisscript.RunPipelined(ctx, s.client, migrateScript, calls) {
		reply, err := cmd.Slice()
		if err == nil && len(reply) != 2 {
			err = errors.New("unexpected reply length")
		}
		if err != nil {
			return moved, rediserr.Map(err, "index layout migration")
		}
		n, _ := reply[0].(int64)
		moved += int(n)
		if bad, ok := reply[1].(string); ok {
			return moved, redstate.Errorf(redstate.EINVALID,
				"index layout migration: relation key %s lists a key that does not start with %s (were the index's prefix or namespace changed?); it was left as it is", bad, m.TablePrefix)
		}
	}
	return moved, nil
}

// MarkLayout implements index.Store: SET key "2", no TTL.
func (s *Store) MarkLayout(ctx context.Context, key string) error {
	return rediserr.Map(s.client.Set(ctx, key, strconv.Itoa(index.LayoutVersion), 0).Err(), "index layout")
}

// LayoutMarked implements index.Store: EXISTS key.
func (s *Store) LayoutMarked(ctx context.Context, key string) (bool, error) {
	n, err := s.client.Exists(ctx, key).Result()
	return n == 1, rediserr.Map(err, "index layout")
}
