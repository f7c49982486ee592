package periodic

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/rediserr"
)

var _ Store = (*RedisStore)(nil)

// RedisStore is the Store in Redis: one HASH (Keys.Ticks), a field per entry holding
// "<tick unix seconds> <fence> <done 0|1> <claimed unix ms>". Each method is one script on
// that key, so it works on standalone, Sentinel and Cluster.
type RedisStore struct {
	client redis.UniversalClient
	key    string
}

// NewRedisStore returns the store of keys.Ticks on client. Errors: EINVALID (no client or key).
func NewRedisStore(client redis.UniversalClient, keys Keys) (*RedisStore, error) {
	if client == nil || keys.Ticks == "" {
		return nil, redstate.Errorf(redstate.EINVALID, "periodic: the tick store needs a Redis client and its key")
	}
	return &RedisStore{client: client, key: keys.Ticks}, nil
}

// initScript: HSETNX the record, return the record the field holds.
var initScript = redis.NewScript(`
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
`)

// beginScript applies Store.Begin's rule (begin in store.go). ARGV: name, at, fence, now ms.
// Reply: {1 begun | 0 not begun | -1 stale, the record}. Fences are below 2^53, so Lua's
// numbers compare them exactly.
var beginScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local claimed = ARGV[4]
if cur then
  local at, fence, done, was = string.match(cur, '^(%-?%d+) (%d+) ([01]) (%-?%d+)$')
  if not at then return redis.error_reply('ERR periodic tick record ' .. ARGV[1] .. ' is not a record: ' .. cur) end
  if tonumber(fence) > tonumber(ARGV[3]) then return {-1, cur} end
  if tonumber(at) > tonumber(ARGV[2]) or (at == ARGV[2] and done == '1') then return {0, cur} end
  if at == ARGV[2] then claimed = was end
end
local rec = ARGV[2] .. ' ' .. ARGV[3] .. ' 0 ' .. claimed
redis.call('HSET', KEYS[1], ARGV[1], rec)
return {1, rec}
`)

// finishScript marks the record done if it is still {at, fence}. ARGV: name, at, fence.
// Reply: 1, or the record (0 when none) when it moved on.
var finishScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
local at, fence, done, claimed = string.match(cur, '^(%-?%d+) (%d+) ([01]) (%-?%d+)$')
if at ~= ARGV[2] or fence ~= ARGV[3] then return cur end
redis.call('HSET', KEYS[1], ARGV[1], at .. ' ' .. fence .. ' 1 ' .. claimed)
return 1
`)

// Init implements Store.
func (s *RedisStore) Init(ctx context.Context, name string, r Record) (Record, error) {
	raw, err := initScript.Run(ctx, s.client, []string{s.key}, name, encodeRecord(r)).Text()
	if err != nil {
		return Record{}, rediserr.Map(err, "periodic init "+name)
	}
	return decodeRecord(name, raw)
}

// Begin implements Store.
func (s *RedisStore) Begin(ctx context.Context, name string, at time.Time, fence int64, now time.Time) (Record, bool, error) {
	reply, err := beginScript.Run(ctx, s.client, []string{s.key}, name, at.Unix(), fence, now.UnixMilli()).Slice()
	if err != nil {
		return Record{}, false, rediserr.Map(err, "periodic begin "+name)
	}
	state, _ := reply[0].(int64)
	raw, _ := reply[1].(string)
	r, err := decodeRecord(name, raw)
	switch {
	case err != nil:
		return Record{}, false, err
	case state < 0:
		return r, false, fmt.Errorf("%w (fence %d above this leader's %d)", ErrStale, r.Fence, fence)
	}
	return r, state == 1, nil
}

// Finish implements Store.
func (s *RedisStore) Finish(ctx context.Context, name string, at time.Time, fence int64) error {
	reply, err := finishScript.Run(ctx, s.client, []string{s.key}, name, at.Unix(), fence).Result()
	if err != nil {
		return rediserr.Map(err, "periodic finish "+name)
	}
	if n, ok := reply.(int64); ok && n == 1 {
		return nil
	}
	return fmt.Errorf("%w: %s's record is %v, not tick %d of fence %d", ErrStale, name, reply, at.Unix(), fence)
}

// encodeRecord is the field value of r.
func encodeRecord(r Record) string {
	done := "0"
	if r.Done {
		done = "1"
	}
	return fmt.Sprintf("%d %d %s %d", r.At.Unix(), r.Fence, done, r.Claimed.UnixMilli())
}

// decodeRecord reads a field value. Errors: EINTERNAL.
func decodeRecord(name, raw string) (Record, error) {
	parts := strings.Split(raw, " ")
	bad := func() (Record, error) {
		return Record{}, redstate.Errorf(redstate.EINTERNAL, "periodic tick record %s is not a record: %q", name, raw)
	}
	if len(parts) != 4 || (parts[2] != "0" && parts[2] != "1") {
		return bad()
	}
	var n [3]int64
	for i, p := range []string{parts[0], parts[1], parts[3]} {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return bad()
		}
		n[i] = v
	}
	return Record{At: time.Unix(n[0], 0), Fence: n[1], Done: parts[2] == "1", Claimed: time.UnixMilli(n[2])}, nil
}
