package redisfeed

import "github.com/redis/go-redis/v9"

// fanOutScript adds one post to the unread sets of a group of followers (all in one slot on
// Cluster): for each follower, unless the follower already read the post (a read that overtook
// the fan-out), ZADD NX into the unread set and, only if it was added, HINCRBY of the count.
// Keys are built here from the parts feed.Keys.ScriptParts returns (one user id per follower
// crosses the wire instead of three keys); KEYS[1] is the first follower's counts hash, for
// routing. A set whose count became 1 was just created: it gets the state TTL plus slack, and
// the counts hash gets the state TTL only if it has none (NX), so a built user's counts hash
// never outlives one of its unread sets (docs/feed.md, "Expiry").
// ARGV[1] read prefix, ARGV[2] unread prefix, ARGV[3] counts prefix, ARGV[4] tag open,
// ARGV[5] tag close, ARGV[6] post id, ARGV[7] score (ms), ARGV[8] author, ARGV[9] TTL ms of
// the counts hash, ARGV[10] TTL ms of the sets, ARGV[11..] follower ids. Returns how many sets
// changed.
var fanOutScript = redis.NewScript(`
local added = 0
local open, close, post, score, author = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
for i = 11, #ARGV do
  local u = open .. ARGV[i] .. close
  if redis.call('SISMEMBER', ARGV[1] .. u, post) == 0 then
    local unread = ARGV[2] .. u .. ':' .. author
    if redis.call('ZADD', unread, 'NX', score, post) == 1 then
      local counts = ARGV[3] .. u
      if redis.call('HINCRBY', counts, author, 1) == 1 then
        redis.call('PEXPIRE', unread, ARGV[10])
        redis.call('PEXPIRE', counts, ARGV[9], 'NX')
      end
      added = added + 1
    end
  end
end
return added
`)

// postScript caches one post unless it is cached (role 'post': a cached copy is newer or as
// new, writers delete it when its SQL row changes, so an older SQL read never overwrites it),
// or adds a post to its author's index only if the index exists (role 'index': a partial index
// would never be built from SQL). One script for both, so that a publish runs both in one
// pipeline (their keys are in different slots on Cluster).
// Role 'post': KEYS[1] post hash, ARGV[2] TTL ms, ARGV[3..] field, value, … Returns 1 if it
// cached. Role 'index': KEYS[1] author index, ARGV[2] score (ms), ARGV[3] post id. Returns 1
// if the index existed.
var postScript = redis.NewScript(`
if ARGV[1] == 'index' then
  if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  return 1
end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// markReadScript marks one post read.
// KEYS[1] read set, KEYS[2] unread set, KEYS[3] counts. ARGV[1] post, ARGV[2] author,
// ARGV[3] TTL ms of the read set. Returns 1 if an unread entry was removed.
var markReadScript = redis.NewScript(`
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
if removed == 1 then
  local c = redis.call('HINCRBY', KEYS[3], ARGV[2], -1)
  if c <= 0 then redis.call('HDEL', KEYS[3], ARGV[2]) end
end
return removed
`)

// markAuthorReadScript marks the given posts of one author read.
// KEYS[1] read set, KEYS[2] unread set, KEYS[3] counts. ARGV[1] author, ARGV[2] TTL ms of the
// read set, ARGV[3..] post ids. Returns how many unread entries were removed.
var markAuthorReadScript = redis.NewScript(`
local removed = 0
for i = 3, #ARGV, 1000 do
  local last = math.min(i + 999, #ARGV)
  redis.call('SADD', KEYS[1], unpack(ARGV, i, last))
  removed = removed + redis.call('ZREM', KEYS[2], unpack(ARGV, i, last))
end
if #ARGV >= 3 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if removed > 0 then
  local c = redis.call('HINCRBY', KEYS[3], ARGV[1], -removed)
  if c <= 0 then redis.call('HDEL', KEYS[3], ARGV[1]) end
end
return removed
`)

// unfollowScript deletes a user's unread state of an author.
// KEYS[1] unread set, KEYS[2] counts. ARGV[1] author.
var unfollowScript = redis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`)

// rebuildScript merges a user's state from SQL and marks it built. Unread keys of authors not
// in the state (unfollowed) are deleted: they are found from the counts hash and built from
// ARGV[3], in the user's slot (the user's hash tag on Cluster).
// KEYS[1] read set, KEYS[2] counts, KEYS[3..] unread sets of the state's authors.
// ARGV[1] TTL ms of the counts hash, ARGV[2] now (ms), ARGV[3] unread key prefix (the key
// without the author), ARGV[4] JSON read ids, ARGV[5] "1" to replace instead of merging,
// ARGV[6] TTL ms of the sets, ARGV[7..] per KEYS[3..]: author id, the follow time (ms; entries
// scored below it are removed; '-inf': none), then JSON [[id, score], …].
var rebuildScript = redis.NewScript(`
local ttl, setTTL = ARGV[1], ARGV[6]
local read = cjson.decode(ARGV[4])
if ARGV[5] == '1' then
  redis.call('DEL', KEYS[1])
  for k = 3, #KEYS do redis.call('DEL', KEYS[k]) end
end
for i = 1, #read, 1000 do
  redis.call('SADD', KEYS[1], unpack(read, i, math.min(i + 999, #read)))
end
local keep = {}
for k = 3, #KEYS do
  local base = 7 + 3 * (k - 3)
  local author, since, entries = ARGV[base], ARGV[base + 1], cjson.decode(ARGV[base + 2])
  keep[author] = true
  if since ~= '-inf' then redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', '(' .. since) end
  for _, e in ipairs(entries) do
    if redis.call('SISMEMBER', KEYS[1], tostring(e[1])) == 0 then
      redis.call('ZADD', KEYS[k], 'NX', e[2], tostring(e[1]))
    end
  end
  for _, m in ipairs(redis.call('ZRANGE', KEYS[k], 0, -1)) do
    if redis.call('SISMEMBER', KEYS[1], m) == 1 then redis.call('ZREM', KEYS[k], m) end
  end
  local n = redis.call('ZCARD', KEYS[k])
  if n > 0 then
    redis.call('HSET', KEYS[2], author, n)
    redis.call('PEXPIRE', KEYS[k], setTTL)
  else
    redis.call('HDEL', KEYS[2], author)
  end
end
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  if f ~= '_built' and not keep[f] then
    redis.call('DEL', ARGV[3] .. f)
    redis.call('HDEL', KEYS[2], f)
  end
end
redis.call('HSET', KEYS[2], '_built', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], setTTL) end
return 1
`)

// pageScript returns a page of a ZSET of post ids scored by create time (ms), newest first,
// ties by id descending (numerically), strictly after the cursor (ARGV[1] score or ” for the
// start, ARGV[2] id), down to ARGV[4] (min score: '-inf' or a time), at most ARGV[3] entries.
// One ZREVRANGEBYSCORE usually serves the page; a group of equal scores is fetched whole only
// where the page's edge cuts it. Returns a flat list id, score, id, score, … KEYS[1] the ZSET.
var pageScript = redis.NewScript(`
local limit = tonumber(ARGV[3])
local out = {}
local function emit(ids, s)
  table.sort(ids, function(a, b) return a > b end)
  for _, id in ipairs(ids) do
    if #out >= 2 * limit then return end
    table.insert(out, tostring(id)); table.insert(out, s)
  end
end
local bound = '+inf'
if ARGV[1] ~= '' then
  local cid = tonumber(ARGV[2])
  local ids = {}
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1])) do
    local id = tonumber(m)
    if id and id < cid then table.insert(ids, id) end
  end
  local g = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1], 'WITHSCORES', 'LIMIT', 0, 1)
  emit(ids, g[2] or ARGV[1])
  bound = '(' .. ARGV[1]
end
while #out < 2 * limit do
  local need = limit - #out / 2
  local r = redis.call('ZREVRANGEBYSCORE', KEYS[1], bound, ARGV[4], 'WITHSCORES', 'LIMIT', 0, need + 1)
  if #r == 0 then break end
  local full = #r == 2 * (need + 1)
  local i, last = 1, nil
  while i <= #r and #out < 2 * limit do
    local s = r[i + 1]
    local ids, j = {}, i
    while j <= #r and r[j + 1] == s do table.insert(ids, tonumber(r[j])); j = j + 2 end
    if j > #r and full then
      ids = {}
      for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], s, s)) do table.insert(ids, tonumber(m)) end
    end
    emit(ids, s)
    last, i = s, j
  end
  if not full then break end
  bound = '(' .. last
end
return out
`)
