package redisindex

import (
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
)

// applyScript applies row changes (index.RowWrite) in order, each atomically: the version
// compare-and-set, then the seed's steps 5-7. A row's version key holds its version, change
// time and relation, the index keys the row is in (index.RowValue, layout 2), so a change reads
// and writes one row key. The script removes the row from the index keys its relation lists
// and the change leaves, which are not in KEYS: they are derived from the data, exactly like
// the seed's step 5. That is legal on a standalone server and, because every key of a table
// shares the table's hash tag there, on Cluster too (the same slot, the same node); the Indexer
// refuses untagged tables on Cluster, and one call holds the rows of one table. Reading the
// relation inside the script saves a round trip per batch and needs no compare-and-set on it.
//
// A change older than the table's truncate key (the version of its newest truncate) is stale
// too, so a change from before a truncate, delivered after it, cannot bring a row back.
//
// Layout 1 kept the relation in a key of its own (kid-, index.Keys.LegacyRelation). A row
// whose version key is of layout 1 ("<version>|<time>", one '|'), or that has no version key
// while the table's layout key is absent (a row of layout 1 whose version key expired), has
// its kid- key read, used as its relation and deleted: the row is of layout 2 after the change.
// The kid- key's name is the version key's with "kid-" for "fil-" (not in KEYS, as above).
//
// What the server does per row is kept small, as it is where an applied change's cost goes:
// one GET, the HSETs, one SET; the relation is compared as text, and decoded only when the row
// leaves a key; what all rows of a call share comes once (one call holds the rows of one table
// with one tombstone TTL, so the truncate and layout keys are read once: no other command can
// change them meanwhile). Each KEYS or ARGV entry costs the server a Lua string and a table
// slot, so a row sends only what the script cannot derive: its version and new relation are
// parts of its new value.
//
// KEYS[1] the table's truncate key, KEYS[2] its layout key; ARGV[1] the tombstone TTL ms,
// ARGV[2] the table's key prefix (index.Keys.TablePrefix). Then for each row in turn: KEYS
// holds its version key and its m index keys after the change; ARGV holds m (-1 for a delete,
// which has no index keys), its id, its new version key value (index.RowValue) and its row
// JSON ("" for a delete). A row in the index keeps its version key without a TTL (it holds the
// relation, which must outlive any quiet time of the row); a tombstone gets the TTL.
// Returns one result per row: 1 applied, 0 stale.
var applyScript = redis.NewScript(`
local function versionOf(value)
  local sep = string.find(value, '|', 1, true)
  if sep then return string.sub(value, 1, sep - 1) end
  return value
end
local got = redis.call('MGET', KEYS[1], KEYS[2])
local floor, layout1, ttl, prefix, out = got[1], not got[2], ARGV[1], ARGV[2], {}
if floor then floor = versionOf(floor) end
local plen = #prefix
local function leave(k, m, id, keys)
  local isNew = {}
  for i = k + 1, k + m do isNew[KEYS[i]] = true end
  for _, key in ipairs(keys) do
    if not isNew[key] then redis.call('HDEL', key, id) end
  end
end
local function apply(k, m, a)
  local vkey, id, value = KEYS[k], ARGV[a + 1], ARGV[a + 2]
  local s1 = string.find(value, '|', 1, true)
  local ver = string.sub(value, 1, s1 - 1)
  if floor and ver < floor then return 0 end
  local cur, rel, legacy = redis.call('GET', vkey), nil, layout1
  if cur then
    local c1 = string.find(cur, '|', 1, true)
    if not (ver > (c1 and string.sub(cur, 1, c1 - 1) or cur)) then return 0 end
    local c2 = c1 and string.find(cur, '|', c1 + 1, true)
    if c2 then rel, legacy = string.sub(cur, c2 + 1), false else legacy = true end
  end
  local del = m < 0
  if legacy then
    local rkey = prefix .. 'kid-' .. string.sub(vkey, plen + 5)
    local old = redis.call('GET', rkey)
    if old then
      leave(k, m, id, cjson.decode(old))
      redis.call('DEL', rkey)
    end
  elseif rel and rel ~= '' and (del or rel ~= string.sub(value, string.find(value, '|', s1 + 1, true) + 1)) then
    local keys = {}
    for part in string.gmatch(rel, '[^|]+') do keys[#keys + 1] = prefix .. part end
    leave(k, m, id, keys)
  end
  if del then
    redis.call('SET', vkey, value, 'PX', ttl)
  else
    local row = ARGV[a + 3]
    for i = k + 1, k + m do redis.call('HSET', KEYS[i], id, row) end
    redis.call('SET', vkey, value)
  end
  return 1
end
local k, a, n = 3, 3, #ARGV
while a <= n do
  local m = tonumber(ARGV[a])
  out[#out + 1] = apply(k, m, a)
  k, a = k + 1 + math.max(m, 0), a + 4
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

// migrateScript moves rows of one table to layout 2 (index.Store.MigrateRows), each on its own.
// ARGV[1] the table's key prefix, ARGV[2] the stamp for a row without a version key; KEYS
// holds each row's version key and layout-1 relation key (kid-). A row with a relation key
// gets its relation, each key without the prefix and separated by '|', after its version key's
// "<version>|<time>" (a value of one part: a version without a time gets the stamp; none at all:
// the version ""), written without a TTL; a version key already of layout 2 (two '|') is kept.
// The relation key is then deleted. A relation listing a key that does not start with the
// prefix is left as it is and ends the call. Returns {rows rewritten, that relation key or
// false}.
var migrateScript = redis.NewScript(`
local prefix, stamp, moved = ARGV[1], ARGV[2], 0
local plen = #prefix
for i = 1, #KEYS, 2 do
  local vkey, rkey = KEYS[i], KEYS[i + 1]
  local old = redis.call('GET', rkey)
  if old then
    local cur = redis.call('GET', vkey)
    local c1 = cur and string.find(cur, '|', 1, true)
    if not (c1 and string.find(cur, '|', c1 + 1, true)) then
      local parts = {}
      for j, key in ipairs(cjson.decode(old)) do
        if string.sub(key, 1, plen) ~= prefix then return {moved, rkey} end
        parts[j] = string.sub(key, plen + 1)
      end
      local head = '|' .. stamp
      if c1 then head = cur elseif cur then head = cur .. '|' .. stamp end
      redis.call('SET', vkey, head .. '|' .. table.concat(parts, '|'))
      moved = moved + 1
    end
    redis.call('DEL', rkey)
  end
end
return {moved, false}
`)
