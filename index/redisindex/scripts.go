package redisindex

import "github.com/redis/go-redis/v9"

// applyScript is one row change (index.RowWrite), atomically: the version compare-and-set,
// then the seed's steps 6-7. The caller read the relation key before and passes what it read:
// if the relation changed since (another change of the row won the race), nothing is done and
// -1 asks the caller to read again, so the old index keys passed in KEYS are always the ones
// the row is in.
//
// KEYS[1] version key, KEYS[2] relation key, KEYS[3 .. 2+nOld] old index keys (from the
// relation), KEYS[3+nOld ..] new index keys.
// ARGV[1] id, ARGV[2] version, ARGV[3] version value ("<version>|<stamp>"), ARGV[4] "1" for a
// delete, ARGV[5] row JSON, ARGV[6] version TTL ms, ARGV[7] relation as read ("" if none),
// ARGV[8] nOld, ARGV[9] new relation JSON.
// Returns 1 applied, 0 stale, -1 relation changed.
var applyScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local sep = string.find(cur, '|', 1, true)
  if sep then cur = string.sub(cur, 1, sep - 1) end
  if not (ARGV[2] > cur) then return 0 end
end
local rel = redis.call('GET', KEYS[2]) or ''
if rel ~= ARGV[7] then return -1 end
local nOld = tonumber(ARGV[8])
local isNew = {}
for i = 3 + nOld, #KEYS do isNew[KEYS[i]] = true end
for i = 3, 2 + nOld do
  if ARGV[4] == '1' or not isNew[KEYS[i]] then redis.call('HDEL', KEYS[i], ARGV[1]) end
end
if ARGV[4] == '1' then
  redis.call('DEL', KEYS[2])
else
  for i = 3 + nOld, #KEYS do redis.call('HSET', KEYS[i], ARGV[1], ARGV[5]) end
  redis.call('SET', KEYS[2], ARGV[9])
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[6])
return 1
`)

// deadLetterScript pushes ARGV[1] onto the list KEYS[1] and keeps the newest ARGV[2] entries.
var deadLetterScript = redis.NewScript(`
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
return 1
`)
