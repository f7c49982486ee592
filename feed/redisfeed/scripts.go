package redisfeed

import "github.com/redis/go-redis/v9"

// fanOutBody adds one post to the unread sets of a group of followers with one command per
// follower: ZADD NX of the post and of the marker "" at -inf (feed.Keys). NX leaves a post the
// follower already holds, unread or read (read posts are kept at -inf: a read that overtook the
// fan-out, a retried fan-out), so the script reads nothing first. Two additions mean the set
// was just created: it gets the set TTL (docs/feed.md, "Expiry"), as PEXPIREAT of the server's
// TIME (read once per call, at the first set created) plus the TTL: the expiry PEXPIRE would
// give, and what PEXPIRE is rewritten to for replicas and the AOF anyway.
//
// The first set the call creates is then DUMPed: every set the call creates holds the same two
// members, so the next followers get theirs with one RESTORE of that copy, with its expiry
// (ABSTTL), instead of ZADD and PEXPIREAT: one command per new set, and RESTORE refuses a key
// that exists, which is the "is the set new?" test for free. A follower whose set exists makes
// RESTORE fail (BUSYKEY); the script then takes ZADD NX for that follower and the next ones
// until ZADD creates a set again, so each run of followers who hold sets costs one failed
// RESTORE at most, and a call whose followers all hold sets (the common case) none. Any failure of DUMP or RESTORE (an ACL without them, say) only means the
// ZADD path: the sets are the same either way.
//
// Keys are joined here from feed.Keys.UnreadParts (one user id per follower crosses the wire
// instead of a key); KEYS[1] is the first follower's unread set, for routing.
// ARGV[1] key before the user id, ARGV[2] key after it, ARGV[3] score (ms), ARGV[4] post id,
// ARGV[5] TTL ms of the sets, ARGV[6..] follower ids. Returns how many sets got the post.
const fanOutBody = `
local before, after, score, post, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local added, expires_at, copy, restoring = 0, nil, nil, false
for i = 6, #ARGV do
  local key = before .. ARGV[i] .. after
  local restored = false
  if restoring then
    local r = redis.pcall('RESTORE', key, expires_at, copy, 'ABSTTL')
    restored = type(r) ~= 'table' or not r.err
    restoring = restored
  end
  if restored then
    added = added + 1
  else
    local n = redis.call('ZADD', key, 'NX', score, post, '-inf', '')
    if n == 2 then
      if not expires_at then
        local t = redis.call('TIME')
        expires_at = string.format('%.0f', t[1] * 1000 + math.floor(t[2] / 1000) + ttl)
        redis.call('PEXPIREAT', key, expires_at)
        local d = redis.pcall('DUMP', key)
        if type(d) == 'string' then copy = d end
      else
        redis.call('PEXPIREAT', key, expires_at)
      end
      restoring = copy ~= nil
      added = added + 1
    elseif n == 1 then
      added = added + 1
    end
  end
end
return added
`

// fanOutScript is fanOutBody for followers whose keys share one slot (a standalone server
// holds every slot).
var fanOutScript = redis.NewScript(fanOutBody)

// fanOutNodeScript is fanOutBody for the followers of one Cluster node, whatever their slots:
// the allow-cross-slot-keys flag (Redis 7.0) lets a script touch keys of several slots as long
// as this node serves them all. A key the node does not serve (the slot moved since the
// followers were grouped) fails the script with an error, never a write elsewhere; FanOut then
// sends that group's followers again by slot.
var fanOutNodeScript = redis.NewScript("#!lua flags=allow-cross-slot-keys\n" + fanOutBody)

// markReadScript marks one post read in the unread set, which holds it at -inf (an unread
// entry moves there; without one, a read entry is added with the marker, so a fan-out that
// comes later does not add the post, and the set gets its TTL if that created it). The read set
// is not written: ReadOf looks in both, and a rebuild renews every set that holds read entries
// (docs/feed.md, "Expiry"). KEYS[1] unread set. ARGV[1] post, ARGV[2] TTL ms of the sets.
// Returns 1 if an unread entry was read.
var markReadScript = redis.NewScript(`
if redis.call('ZADD', KEYS[1], 'XX', 'CH', '-inf', ARGV[1]) == 1 then return 1 end
if redis.call('ZADD', KEYS[1], 'NX', '-inf', ARGV[1], '-inf', '') == 2 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// markAuthorReadScript marks the given posts of one author read, as markReadScript does each.
// KEYS[1] unread set. ARGV[1] TTL ms of the sets, ARGV[2..] post ids. Returns how many unread
// entries were read.
var markAuthorReadScript = redis.NewScript(`
local read, created = 0, redis.call('EXISTS', KEYS[1]) == 0
for i = 2, #ARGV, 1000 do
  local last = math.min(i + 999, #ARGV)
  local args = {}
  for j = i, last do table.insert(args, '-inf'); table.insert(args, ARGV[j]) end
  read = read + redis.call('ZADD', KEYS[1], 'XX', 'CH', unpack(args))
  table.insert(args, '-inf'); table.insert(args, '')
  redis.call('ZADD', KEYS[1], 'NX', unpack(args))
end
if created then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return read
`)

// rebuildScript merges a user's state from SQL and marks it built. Per fan-out author:
// entries older than the follow are removed (not those at -inf), the author's read posts are
// held at -inf, its unread entries added unless held (NX: an entry a racing fan-out added
// stays), and, unless the set would stay empty (no key then), the marker added and the set TTL
// given. The read set gets every read post. The unread sets of the hybrid authors (read marks
// only, or entries from before the author became hybrid) get the set TTL if they exist, so that
// no read mark expires before the built marker.
// KEYS[1] read set, KEYS[2] built marker, KEYS[3..2+n] unread sets of the state's fan-out
// authors, KEYS[3+n..] those of its hybrid authors.
// ARGV[1] TTL ms of the built marker, ARGV[2] now (ms), ARGV[3] "1" to replace instead of
// merging, ARGV[4] TTL ms of the sets, ARGV[5] JSON read ids (all authors), ARGV[6] n, ARGV[7..]
// per fan-out set: the follow time (ms; entries scored below it are removed; '-inf': none), JSON
// read ids of the author, JSON [[id, score], …] unread.
var rebuildScript = redis.NewScript(`
local setTTL, n = ARGV[4], tonumber(ARGV[6])
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
  for k = 3, 2 + n do redis.call('DEL', KEYS[k]) end
end
local read = cjson.decode(ARGV[5])
for i = 1, #read, 1000 do
  redis.call('SADD', KEYS[1], unpack(read, i, math.min(i + 999, #read)))
end
for k = 3, 2 + n do
  local base = 7 + 3 * (k - 3)
  local since, gone, entries = ARGV[base], cjson.decode(ARGV[base + 1]), cjson.decode(ARGV[base + 2])
  if since ~= '-inf' then redis.call('ZREMRANGEBYSCORE', KEYS[k], '(-inf', '(' .. since) end
  for _, id in ipairs(gone) do redis.call('ZADD', KEYS[k], '-inf', tostring(id)) end
  for _, e in ipairs(entries) do redis.call('ZADD', KEYS[k], 'NX', e[2], tostring(e[1])) end
  if #gone > 0 or #entries > 0 or redis.call('EXISTS', KEYS[k]) == 1 then
    redis.call('ZADD', KEYS[k], 'NX', '-inf', '')
    redis.call('PEXPIRE', KEYS[k], setTTL)
  end
end
for k = 3 + n, #KEYS do redis.call('PEXPIRE', KEYS[k], setTTL) end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], setTTL) end
return 1
`)

// unreadCountsScript counts a user's unread entries (above -inf) per author.
// KEYS: the unread sets. Returns the counts in KEYS' order.
var unreadCountsScript = redis.NewScript(`
local out = {}
for i = 1, #KEYS do out[i] = redis.call('ZCOUNT', KEYS[i], '(-inf', '+inf') end
return out
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
