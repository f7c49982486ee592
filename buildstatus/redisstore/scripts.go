package redisstore

import (
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
)

// Script results. Every script returns an array whose first element is one of these.
const (
	resOK           = "OK"
	resNotFound     = "NOTFOUND"
	resPrecondition = "PRECONDITION"
	resExists       = "EXISTS"
	resConflict     = "CONFLICT"
	// resError: saveScript only; a Redis error (e.g. WRONGTYPE) hit by one save of a call,
	// with its message. Lua does not roll back, so it is that save's reply alone: the saves
	// before it in the call stay committed and report OK.
	resError = "ERROR"
)

// saveScript stores build documents, indexes them and publishes the changes. It takes one or
// more saves (a group commit: concurrent saves coalesced into one call, see batch.go); each
// save is atomic on its own and independent of the others in the call.
//
//	KEYS[1]  the call's marker (resend.MarkerKey under keys.CallMarkers, same slot as the build
//	         keys); read and written only when ARGV[3] is "1"
//	ARGV[1]  TTL in milliseconds, for every save of the call
//	ARGV[2]  lifetime of the call marker in milliseconds (resend.Window)
//	ARGV[3]  "1" when a save of the call is conditional (IfMatch, IfNoneMatch), else "0"
//	then, for save i (1-based), KEYS[2i..2i+1] and the saveArgs values from ARGV[a+1],
//	a = 3 + saveArgs*(i-1):
//	KEYS[2i]    build key (keys.Build)
//	KEYS[2i+1]  project index: keys.ProjectIndex on standalone, keys.ProjectShard (same slot as
//	            the build key) on Cluster
//	a+1  new JSON document
//	a+2  IfMatch ETag, "" for none
//	a+3  "1" for IfNoneMatch, else "0"
//	a+4  projectId of the new document
//	a+5  identity prefix: the document's first bytes up to and including its projectId,
//	     exactly {"buildId":"…","projectId":"…", ("" = unknown). A stored value that starts with
//	     the same bytes is the same build of the same project; only the prefix is read
//	     (GETRANGE), not the whole stored document
//	a+6  index score (buildstatus.ProjectScore)
//	a+7  build id (index member)
//	a+8  events channel (keys.Events; a channel, not a key)
//	a+9  "1" to return the current value with a PRECONDITION result (CAS retries)
//
// A call with a conditional save runs once (internal/resend): it stores its replies (without
// current values) in its marker, and a copy of the call that go-redis sent again
// (internal/resend) after the first copy ran finds the marker, changes nothing and answers
// what the first copy answered (with the current value of a PRECONDITION that asks for it).
// Otherwise the copy of a save with IfMatch would find the document it had written (another
// ETag) and the copy of a create the build it had created, and both would answer 412 for a
// write that took effect. Only that call's copy finds the marker: another caller saving the
// same bytes with a stale condition still gets its 412. One marker serves the whole call (a
// call runs atomically, all its saves or none), so it costs one GET and one SET per call, not
// per save. A call of unconditional saves only never reads or writes it: sent twice, it writes
// the same documents twice and publishes them twice (a watcher gets the same document, the
// same ETag, again).
//
// Returns one reply per save, in order: {"OK"}; {"NOTFOUND"} (IfMatch on a missing build);
// {"PRECONDITION"} or {"PRECONDITION", current} (ETag mismatch); {"EXISTS"} (IfNoneMatch on an
// existing build, also with IfMatch); {"CONFLICT"} (the current value belongs to another project
// or is not JSON); {"ERROR", message} (a Redis error hit by this save, see resError).
//
// The index keeps the larger of its current TTL and the build's, so it never expires before
// any build it lists: PEXPIRE GT extends it (one call in the common case), PEXPIRE NX gives a
// freshly created index its first TTL. NX is needed only when ZADD added a member (a member
// that was there means the index existed, and every index gets its TTL from the script that
// creates it), and an index is extended once per call (every save of a call has the same TTL,
// so a second PEXPIRE GT in the same call could only fail). The event payload is the stored
// document itself (see watch.go). On Cluster every save of one call has its keys in one slot
// (batch.go groups them by slot).
var saveScript = redis.NewScript(`
local ttl = tonumber(ARGV[1])
local once = ARGV[3] == '1'
local n = (#KEYS - 1) / 2
if once then
  local done = redis.call('GET', KEYS[1])
  if done then
    local out = cjson.decode(done)
    for i = 1, n do
      if out[i][1] == 'PRECONDITION' and ARGV[3 + 9 * (i - 1) + 9] == '1' then
        local cur = redis.call('GET', KEYS[2 * i])
        if cur then out[i][2] = cur end
      end
    end
    return out
  end
end
local extended = {}
local function sameProject(cur, a)
  local ok, old = pcall(cjson.decode, cur)
  return ok and type(old) == 'table' and old['projectId'] == ARGV[a + 4]
end
local function save(bk, ik, a)
  local doc = ARGV[a + 1]
  local prefix = ARGV[a + 5]
  if ARGV[a + 2] ~= '' then
    local cur = redis.call('GET', bk)
    if not cur then return {'NOTFOUND'} end
    if ARGV[a + 3] == '1' then return {'EXISTS'} end
    if redis.sha1hex(cur) ~= ARGV[a + 2] then
      if ARGV[a + 9] == '1' then return {'PRECONDITION', cur} end
      return {'PRECONDITION'}
    end
    if prefix == '' or string.sub(cur, 1, #prefix) ~= prefix then
      if not sameProject(cur, a) then return {'CONFLICT'} end
    end
  else
    local head = ''
    if prefix ~= '' then head = redis.call('GETRANGE', bk, 0, #prefix - 1) end
    if head ~= prefix or prefix == '' then
      local cur = redis.call('GET', bk)
      if cur then
        if ARGV[a + 3] == '1' then return {'EXISTS'} end
        if not sameProject(cur, a) then return {'CONFLICT'} end
      end
    elseif ARGV[a + 3] == '1' then
      return {'EXISTS'}
    end
  end
  redis.call('SET', bk, doc, 'PX', ttl)
  local added = redis.call('ZADD', ik, ARGV[a + 6], ARGV[a + 7])
  if not extended[ik] then
    if redis.call('PEXPIRE', ik, ttl, 'GT') == 0 and added == 1 then
      redis.call('PEXPIRE', ik, ttl, 'NX')
    end
    extended[ik] = true
  end
  redis.call('PUBLISH', ARGV[a + 8], doc)
  return {'OK'}
end
local out, replies = {}, {}
for i = 1, n do
  local ok, res = pcall(save, KEYS[2 * i], KEYS[2 * i + 1], 3 + 9 * (i - 1))
  if not ok then
    if type(res) == 'table' then res = res.err end
    res = {'ERROR', tostring(res)}
  end
  out[i] = res
  if res[1] == 'ERROR' then replies[i] = res else replies[i] = {res[1]} end
end
if once then redis.call('SET', KEYS[1], cjson.encode(replies), 'PX', ARGV[2]) end
return out
`)

// saveArgs is the number of ARGV values per save in saveScript.
const saveArgs = 9

// deleteScript removes a build and its index entry and publishes the deletion, atomically,
// provided the build still has the expected ETag. The caller learns the project (hence
// KEYS[2]) and the ETag with a GET first; a PRECONDITION result means a concurrent write.
//
//	KEYS[1] build key
//	KEYS[2] project index (standalone) or shard (Cluster, same slot as KEYS[1])
//	ARGV[1] expected ETag
//	ARGV[2] build id (index member)
//	ARGV[3] events channel
//
// Returns {"OK"}, {"NOTFOUND"} or {"PRECONDITION"}. The event payload is "deleted". Once per
// call (resend.Once, the marker last in KEYS and its lifetime last in ARGV): the copy of a
// delete that go-redis sends again answers OK, not NOTFOUND (a 404 for a delete that took
// effect), and publishes nothing.
var deleteScript = resend.Once(`
local cur = redis.call('GET', KEYS[1])
if not cur then return {'NOTFOUND'} end
if redis.sha1hex(cur) ~= ARGV[1] then return {'PRECONDITION'} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('PUBLISH', ARGV[3], 'deleted')
return {'OK'}
`)

// pageScript reads the next entries of one project index (or shard) strictly after a cursor,
// in listing order: score descending, then member descending (byte order). Ties are located
// by binary search over ranks inside the cursor's score, so a page costs O(log² n + count)
// however many builds share a score. Members are compared byte by byte, never with Lua's
// locale-dependent string '<'.
//
//	KEYS[1] project index or shard
//	ARGV[1] cursor score (integer), "" to start at the top
//	ARGV[2] cursor build id (ignored when ARGV[1] is "")
//	ARGV[3] count, at least 1
//
// Returns a flat array {member1, score1, member2, score2, …} of at most count entries.
var pageScript = redis.NewScript(`
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local start = 0
if ARGV[1] ~= '' then
  local s = ARGV[1]
  local lo = redis.call('ZCOUNT', KEYS[1], '(' .. s, '+inf')
  local hi = lo + redis.call('ZCOUNT', KEYS[1], s, s)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', KEYS[1], mid, mid, 'REV')[1]
    if less(m, ARGV[2]) then hi = mid else lo = mid + 1 end
  end
  start = lo
end
return redis.call('ZRANGE', KEYS[1], start, start + tonumber(ARGV[3]) - 1, 'REV', 'WITHSCORES')
`)

// pruneScript removes stale project-index entries: members whose build no longer exists
// (expired, deleted) or now belongs to another project. Each check happens atomically with
// its removal, so an entry re-added by a concurrent save is never lost.
//
//	KEYS[1]    project index or shard
//	KEYS[2..n] build keys of the suspected members (same slot as KEYS[1] on Cluster)
//	ARGV[1]    projectId
//	ARGV[2..n] the members (build ids), ARGV[i] belonging to KEYS[i]
//
// Returns the number of members removed.
var pruneScript = redis.NewScript(`
local removed = 0
for i = 2, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  local stale = not cur
  if cur then
    local ok, doc = pcall(cjson.decode, cur)
    stale = not ok or type(doc) ~= 'table' or doc['projectId'] ~= ARGV[1]
  end
  if stale then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
`)

// directoryScript records, on Cluster, that a project has an index shard in a slot. It runs
// before the save script, so the directory is always a superset of the shards in use.
//
//	KEYS[1] keys.ProjectShards(project)
//	ARGV[1] slot number (keys.SlotOfBuild)
//	ARGV[2] TTL in milliseconds
//
// Returns 1. The set keeps the larger of its current TTL and ARGV[2].
var directoryScript = redis.NewScript(`
redis.call('SADD', KEYS[1], ARGV[1])
local ttl = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`)
