package redisindex

import (
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
)

// applyScript applies row changes (index.RowWrite) in order, each atomically: the version
// compare-and-set, then the seed's steps 5-7. It reads each row's relation key itself and
// removes the row from the index keys listed there (the keys it is in), which are not in KEYS:
// they are derived from the data, exactly like the seed's step 5. That is legal on a standalone
// server and, because every key of a table shares the table's hash tag there, on Cluster too
// (the same slot, the same node); the Indexer refuses untagged tables on Cluster, and one call
// holds the rows of one table. Reading the relation inside the script saves a
// round trip per batch and needs no compare-and-set on the relation.
//
// A change older than the table's truncate key (the version of its newest truncate) is stale
// too, so a change from before a truncate, delivered after it, cannot bring a row back.
//
// What the server does per row is kept small, as it is where an applied change's cost goes:
// the version and the relation are read by one MGET, a relation equal to the new one is
// neither decoded nor written (an update that leaves the row in its keys), and what all rows
// of a call share comes once: one call holds the rows of one table with one version TTL, so
// the truncate key is read once (no other command can change it meanwhile). Each KEYS or
// ARGV entry costs the server a Lua string and a table slot, so a row sends only what the
// script cannot derive: its version is the part of its version value before the last '|' (the
// stamp after it has none), compared, as index.Newer does, with the part of the stored value
// before the first '|'.
//
// KEYS[1] the table's truncate key, ARGV[1] the version TTL ms. Then for each row in turn:
// KEYS holds its version key, its relation key and its m index keys after the change; ARGV
// holds m (-1 for a delete, which has no index keys), its id, its version value
// ("<version>|<stamp>"), its row JSON and its new relation JSON ("" for a delete).
// Returns one result per row: 1 applied, 0 stale.
var applyScript = redis.NewScript(`
local function versionOf(value)
  local sep = string.find(value, '|', 1, true)
  if sep then return string.sub(value, 1, sep - 1) end
  return value
end
local floor, ttl, out = redis.call('GET', KEYS[1]), ARGV[1], {}
if floor then floor = versionOf(floor) end
local function apply(k, m, a)
  local vkey, rkey, id, value = KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2]
  local ver = string.match(value, '^(.*)|') or value
  if floor and ver < floor then return 0 end
  local got = redis.call('MGET', vkey, rkey)
  if got[1] and not (ver > versionOf(got[1])) then return 0 end
  local rel, newRel, del = got[2], ARGV[a + 4], m < 0
  if rel and (del or rel ~= newRel) then
    local isNew = {}
    for i = k + 2, k + 1 + m do isNew[KEYS[i]] = true end
    for _, key in ipairs(cjson.decode(rel)) do
      if not isNew[key] then redis.call('HDEL', key, id) end
    end
  end
  if del then
    if rel then redis.call('DEL', rkey) end
  else
    local row = ARGV[a + 3]
    for i = k + 2, k + 1 + m do redis.call('HSET', KEYS[i], id, row) end
    if rel ~= newRel then redis.call('SET', rkey, newRel) end
  end
  redis.call('SET', vkey, value, 'PX', ttl)
  return 1
end
local k, a, n = 2, 2, #ARGV
while a <= n do
  local m = tonumber(ARGV[a])
  out[#out + 1] = apply(k, m, a)
  k, a = k + 2 + math.max(m, 0), a + 5
end
return out
`)

// raiseFloorScript writes a table's truncate key if the truncate is newer than the stored one.
// KEYS[1] truncate key; ARGV[1] version, ARGV[2] value ("<version>|<stamp>"), ARGV[3] TTL ms.
// Returns 1 written, 0 stale.
var raiseFloorScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local sep = string.find(cur, '|', 1, true)
  if sep then cur = string.sub(cur, 1, sep - 1) end
  if not (ARGV[1] > cur) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

// deadLetterScript pushes ARGV[1] onto the list KEYS[1] and keeps the newest ARGV[2] entries,
// once per call (resend.Once: the call's marker last in KEYS, its lifetime last in ARGV).
var deadLetterScript = resend.Once(`
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
return 1
`)

// countersScript adds to the counters hash KEYS[1]: ARGV holds field, increment pairs. Once per
// call (resend.Once: the call's marker last in KEYS, its lifetime last in ARGV).
var countersScript = resend.Once(`
for i = 1, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
`)
