package redisindex

import (
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
)

// applyScript is one row change (index.RowWrite), atomically: the version compare-and-set, then
// the seed's steps 5-7. It reads the row's relation key itself and removes the row from the
// index keys listed there (the keys it is in), which are not in KEYS: they are derived from the
// data, exactly like the seed's step 5. That is legal on a standalone server and, because every
// key of a table shares the table's hash tag there, on Cluster too (the same slot, the same
// node); the Indexer refuses untagged tables on Cluster. Reading the relation inside the script
// saves a round trip per batch and needs no compare-and-set on the relation. A relation that
// did not change (an update that leaves the row in its keys) is not written again.
//
// A change older than the table's truncate key (the version of its newest truncate) is stale
// too, so a change from before a truncate, delivered after it, cannot bring a row back.
//
// KEYS[1] version key, KEYS[2] relation key, KEYS[3] the table's truncate key, KEYS[4..] the
// row's index keys after the change.
// ARGV[1] id, ARGV[2] version, ARGV[3] version value ("<version>|<stamp>"), ARGV[4] "1" for a
// delete, ARGV[5] row JSON, ARGV[6] version TTL ms, ARGV[7] new relation JSON.
// Returns 1 applied, 0 stale.
var applyScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local sep = string.find(cur, '|', 1, true)
  if sep then cur = string.sub(cur, 1, sep - 1) end
  if not (ARGV[2] > cur) then return 0 end
end
local floor = redis.call('GET', KEYS[3])
if floor then
  local sep = string.find(floor, '|', 1, true)
  if sep then floor = string.sub(floor, 1, sep - 1) end
  if ARGV[2] < floor then return 0 end
end
local rel = redis.call('GET', KEYS[2])
if rel then
  local isNew = {}
  if ARGV[4] ~= '1' then
    for i = 4, #KEYS do isNew[KEYS[i]] = true end
  end
  for _, k in ipairs(cjson.decode(rel)) do
    if not isNew[k] then redis.call('HDEL', k, ARGV[1]) end
  end
end
if ARGV[4] == '1' then
  redis.call('DEL', KEYS[2])
else
  for i = 4, #KEYS do redis.call('HSET', KEYS[i], ARGV[1], ARGV[5]) end
  if rel ~= ARGV[7] then redis.call('SET', KEYS[2], ARGV[7]) end
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[6])
return 1
`)

// applyManyScript is applyScript for several rows in one call, applied in order, each as
// applyScript would (the same steps, the same result).
//
// For each row in turn: ARGV holds its number of keys n, then applyScript's seven ARGV; KEYS
// holds its n keys (version key, relation key, truncate key, index keys), in the same order as
// ARGV.
// Returns one result per row: 1 applied, 0 stale.
var applyManyScript = redis.NewScript(`
local function apply(k, n, a)
  local vkey, rkey, id, ver, del = KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], ARGV[a + 4]
  local cur = redis.call('GET', vkey)
  if cur then
    local sep = string.find(cur, '|', 1, true)
    if sep then cur = string.sub(cur, 1, sep - 1) end
    if not (ver > cur) then return 0 end
  end
  local floor = redis.call('GET', KEYS[k + 2])
  if floor then
    local sep = string.find(floor, '|', 1, true)
    if sep then floor = string.sub(floor, 1, sep - 1) end
    if ver < floor then return 0 end
  end
  local rel = redis.call('GET', rkey)
  if rel then
    local isNew = {}
    if del ~= '1' then
      for i = k + 3, k + n - 1 do isNew[KEYS[i]] = true end
    end
    for _, key in ipairs(cjson.decode(rel)) do
      if not isNew[key] then redis.call('HDEL', key, id) end
    end
  end
  if del == '1' then
    redis.call('DEL', rkey)
  else
    local row = ARGV[a + 5]
    for i = k + 3, k + n - 1 do redis.call('HSET', KEYS[i], id, row) end
    if rel ~= ARGV[a + 7] then redis.call('SET', rkey, ARGV[a + 7]) end
  end
  redis.call('SET', vkey, ARGV[a + 3], 'PX', ARGV[a + 6])
  return 1
end
local out, k, a = {}, 1, 1
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  out[#out + 1] = apply(k, n, a)
  k, a = k + n, a + 8
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
