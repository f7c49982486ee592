package redisqueue

import (
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
)

// The scripts of jobs with a record (queue.JobBroker). A record is the HASH Keys.Job(id):
//
//	state      queue.JobState
//	raw        the job's current stored string (pending, scheduled, retry or dead entry)
//	enq        enqueue time, Unix ms      due       when it is (was) due, Unix ms
//	since      last transition, Unix ms   finished  when it finished, Unix ms
//	retention  ms the record lives once finished (it then gets a PEXPIRE)
//	attempts   n; attempt i is s<i> (start), e<i> (end), c<i> (consumer), x<i> (error)
//	result     the handler's result (done)            cancel  "1": cancel requested (active)
//
// and every transition also moves the job id between the state indexes (Keys.JobIndexPrefix +
// state, ZSETs scored by transition time). The index and record keys of a job are built in Lua
// from the prefixes passed in ARGV and the job id read from the message: a message with a
// record starts with queue.RecordPrefix, so messages without one are recognised by their first
// seven bytes and never decoded. Every such key carries the queue's hash tag on Cluster (the
// prefixes do), so each script still touches one slot.

// luaJob is the prelude of the record-aware scripts. jp and ip (the record and index
// prefixes) must be set by the script before it calls them.
const luaJob = `
local jp, ip
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function recid(raw)
  if string.sub(raw, 1, 7) ~= '{"Job":' then return nil end
  local ok, m = pcall(cjson.decode, raw)
  if not ok or type(m) ~= 'table' or type(m.JobId) ~= 'string' then return nil end
  return m.JobId
end
local function move(id, to, t, raw)
  local rk = jp .. id
  local old = redis.call('HGET', rk, 'state')
  if not old then return nil end
  redis.call('ZREM', ip .. old, id)
  redis.call('ZADD', ip .. to, t, id)
  redis.call('HSET', rk, 'state', to, 'since', t)
  if raw then redis.call('HSET', rk, 'raw', raw) end
  return old
end
local function endattempt(id, t, err)
  local rk = jp .. id
  local n = tonumber(redis.call('HGET', rk, 'attempts') or '0')
  if n > 0 and redis.call('HEXISTS', rk, 'e' .. n) == 0 then
    redis.call('HSET', rk, 'e' .. n, t)
    if err and err ~= '' then redis.call('HSET', rk, 'x' .. n, err) end
  end
end
local function finish(id, to, t, raw)
  local rk = jp .. id
  if not move(id, to, t, raw) then return end
  redis.call('HSET', rk, 'finished', t)
  redis.call('HDEL', rk, 'cancel')
  redis.call('PEXPIRE', rk, tonumber(redis.call('HGET', rk, 'retention')))
  -- Entries of records that expired leave the finished indexes two per finish, so the
  -- indexes stay as large as the records they list.
  for _, old in ipairs(redis.call('ZRANGE', ip .. to, 0, 1)) do
    if redis.call('EXISTS', jp .. old) == 0 then redis.call('ZREM', ip .. to, old) end
  end
end
local function topending(raw, t)
  local id = recid(raw)
  if not id then return end
  local st = redis.call('HGET', jp .. id, 'state')
  if not st or st == 'done' or st == 'cancelled' then return end
  if st == 'active' then endattempt(id, t, 'interrupted: returned to pending') end
  if st == 'dead' then
    redis.call('PERSIST', jp .. id)
    redis.call('HDEL', jp .. id, 'finished')
  end
  move(id, 'pending', t, raw)
end
`

// enqueueJobsScript stores new jobs of one queue with their records, in order: each job as one
// enqueue of its own, so a later job of the batch sees the records and unique locks of the
// earlier ones. A job is not stored when its record exists (it is answered with the record) or
// its unique lock is held (answered with the holder). The new jobs' entries in the pending
// list, the scheduled set and the state indexes are written at the end, one command each for
// the whole batch (nothing reads them in between). It calls none of luaJob's helpers: a
// script's prelude runs on every call.
//
//	KEYS[1]  pending LIST      KEYS[2]  scheduled ZSET
//	KEYS[1+2i], KEYS[2+2i]   job i's record HASH and unique lock STRING (any key of the slot
//	                         when it has no lock)
//	ARGV[1]  index prefix
//	ARGV[5i-3 .. 5i+1]       job i's encoded message, id, due time in Unix ms ("" for pending
//	                         now), unique window ms (0: no lock), retention ms
//
// Returns one reply per job: {"NEW", enqueue time in Unix ms} (the caller has the rest of the
// new record), {"OLD", record...} (HGETALL pairs), {"UNIQUE", holder id} or {"ERROR", message}
// (a command failed for that job alone: the others are stored).
var enqueueJobsScript = redis.NewScript(`
local now = redis.call('TIME')
local t = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local ts = tostring(t)
local pending, scheduled, ipending, ischeduled = {}, {}, {}, {}
local function enqueue(rk, uk, a)
  local raw, id, due = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  if redis.call('EXISTS', rk) == 1 then
    local out = redis.call('HGETALL', rk)
    table.insert(out, 1, 'OLD')
    return out
  end
  if ARGV[a + 3] ~= '0' then
    local holder = redis.call('GET', uk)
    if holder then return {'UNIQUE', holder} end
    redis.call('SET', uk, id, 'PX', ARGV[a + 3])
  end
  if due == '' then
    redis.call('HSET', rk, 'state', 'pending', 'raw', raw, 'enq', ts, 'due', ts, 'since', ts,
      'retention', ARGV[a + 4], 'attempts', 0)
    pending[#pending + 1] = raw
    ipending[#ipending + 1] = ts
    ipending[#ipending + 1] = id
  else
    redis.call('HSET', rk, 'state', 'scheduled', 'raw', raw, 'enq', ts, 'due', due, 'since', ts,
      'retention', ARGV[a + 4], 'attempts', 0)
    scheduled[#scheduled + 1] = due
    scheduled[#scheduled + 1] = raw
    ischeduled[#ischeduled + 1] = ts
    ischeduled[#ischeduled + 1] = id
  end
  return {'NEW', ts}
end
local out = {}
for i = 1, (#KEYS - 2) / 2 do
  local ok, res = pcall(enqueue, KEYS[1 + 2 * i], KEYS[2 + 2 * i], 2 + 5 * (i - 1))
  if not ok then
    if type(res) == 'table' then res = res.err end
    res = {'ERROR', tostring(res)}
  end
  out[i] = res
end
if #pending > 0 then
  redis.call('LPUSH', KEYS[1], unpack(pending))
  redis.call('ZADD', ARGV[1] .. 'pending', unpack(ipending))
end
if #scheduled > 0 then
  redis.call('ZADD', KEYS[2], unpack(scheduled))
  redis.call('ZADD', ARGV[1] .. 'scheduled', unpack(ischeduled))
end
return out
`)

// enqueueJobArgs is the number of ARGV values per job in enqueueJobsScript.
const enqueueJobArgs = 5

// startJobScript starts a delivered job with a record (queue.Broker.StartJob). Once per call.
//
//	KEYS[1]  the consumer's processing LIST   KEYS[2]  pending LIST
//	KEYS[3]  paused STRING                     KEYS[4]  the record HASH
//	ARGV[1]  the delivered raw   ARGV[2]  consumer id   ARGV[3]  job id
//	ARGV[4]  record prefix       ARGV[5]  index prefix
//
// Returns "RUN", "CANCELLED" (taken out of flight), "PAUSED" (back at the head of pending) or
// "CONFLICT" (not in flight).
var startJobScript = resend.Once(luaJob + `
jp, ip = ARGV[4], ARGV[5]
if not redis.call('LPOS', KEYS[1], ARGV[1]) then return 'CONFLICT' end
local st = redis.call('HGET', KEYS[4], 'state')
if st == 'cancelled' then
  redis.call('LREM', KEYS[1], -1, ARGV[1])
  return 'CANCELLED'
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('LREM', KEYS[1], -1, ARGV[1])
  redis.call('RPUSH', KEYS[2], ARGV[1])
  return 'PAUSED'
end
if st then
  local t = clock()
  endattempt(ARGV[3], t, 'interrupted: started again')
  local n = redis.call('HINCRBY', KEYS[4], 'attempts', 1)
  redis.call('HSET', KEYS[4], 's' .. n, t, 'c' .. n, ARGV[2])
  move(ARGV[3], 'active', t, ARGV[1])
end
return 'RUN'
`)

// settleJobScript settles a delivered job with a record: ack (done or cancelled), retry or bury,
// updating the record in the same step. Once per call.
//
//	KEYS[1]  the consumer's processing LIST
//	KEYS[2]  the place it goes to: retry ZSET, dead LIST, or (ack) the processing LIST again
//	KEYS[3]  the record HASH
//	ARGV[1]  the delivered raw   ARGV[2]  job id   ARGV[3]  "done", "cancelled", "retrying" or "dead"
//	ARGV[4]  the next stored string (retry, dead) or the result (done; "" for none)
//	ARGV[5]  due time in Unix ms (retry)   ARGV[6]  the attempt's error
//	ARGV[7]  record prefix   ARGV[8]  index prefix
//
// Returns 1, or 0 when raw was not in the processing list (nothing changed).
var settleJobScript = resend.Once(luaJob + `
jp, ip = ARGV[7], ARGV[8]
if redis.call('LREM', KEYS[1], -1, ARGV[1]) == 0 then return 0 end
local t, to = clock(), ARGV[3]
local exists = redis.call('EXISTS', KEYS[3]) == 1
if exists then endattempt(ARGV[2], t, ARGV[6]) end
if to == 'retrying' then
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[4])
  if exists then move(ARGV[2], 'retrying', t, ARGV[4]) end
  return 1
end
if to == 'dead' then
  redis.call('LPUSH', KEYS[2], ARGV[4])
  if exists then finish(ARGV[2], 'dead', t, ARGV[4]) end
  return 1
end
if exists then
  if to == 'done' and ARGV[4] ~= '' then redis.call('HSET', KEYS[3], 'result', ARGV[4]) end
  finish(ARGV[2], to, t, nil)
end
return 1
`)

// cancelJobScript cancels a job (queue.Broker.CancelJob). Once per call.
//
//	KEYS[1]  the record HASH   KEYS[2]  pending LIST   KEYS[3]  scheduled ZSET   KEYS[4]  retry ZSET
//	ARGV[1]  job id   ARGV[2]  record prefix   ARGV[3]  index prefix
//
// Returns {"NOTFOUND"}, {"FINISHED", state}, or {"OK", record...} (HGETALL pairs after the step).
var cancelJobScript = resend.Once(luaJob + `
jp, ip = ARGV[2], ARGV[3]
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return {'NOTFOUND'} end
if st == 'done' or st == 'dead' or st == 'cancelled' then return {'FINISHED', st} end
local t = clock()
if st == 'active' then
  redis.call('HSET', KEYS[1], 'cancel', '1')
else
  local raw = redis.call('HGET', KEYS[1], 'raw')
  if st == 'scheduled' then redis.call('ZREM', KEYS[3], raw)
  elseif st == 'retrying' then redis.call('ZREM', KEYS[4], raw)
  else redis.call('LREM', KEYS[2], 1, raw) end
  -- A pending job no longer on the list was dequeued and not started: StartJob refuses it.
  finish(ARGV[1], 'cancelled', t, nil)
end
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, 'OK')
return out
`)

// requeueJobScript moves a dead job back to the tail of pending (queue.Broker.RequeueJob).
// Once per call.
//
//	KEYS[1]  the record HASH   KEYS[2]  dead LIST   KEYS[3]  pending LIST
//	ARGV[1]  job id   ARGV[2]  record prefix   ARGV[3]  index prefix
//
// Returns {"NOTFOUND"}, {"STATE", state}, {"PURGED"} or {"OK", record...}.
var requeueJobScript = resend.Once(luaJob + `
jp, ip = ARGV[2], ARGV[3]
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return {'NOTFOUND'} end
if st ~= 'dead' then return {'STATE', st} end
local raw = redis.call('HGET', KEYS[1], 'raw')
if redis.call('LREM', KEYS[2], 1, raw) == 0 then return {'PURGED'} end
redis.call('LPUSH', KEYS[3], raw)
topending(raw, clock())
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, 'OK')
return out
`)

// promoteJobsScript moves due entries of the retry schedule and the scheduled set, earliest due
// first (ties: retries first, then by member), to the tail (left end) of the pending list, and
// turns the records of those with one pending. Like a resend.Once script it stores its reply
// under the call's marker, but only when it moved something: a copy of a call that moved nothing
// may run again harmlessly, and the worker's frequent promote rounds, which mostly find nothing
// due, leave no marker behind.
//
//	KEYS[1]  retry ZSET   KEYS[2]  scheduled ZSET   KEYS[3]  pending LIST   KEYS[4]  the marker
//	ARGV[1]  now in Unix ms   ARGV[2]  limit (>= 1)   ARGV[3]  record prefix   ARGV[4]  index prefix
//	ARGV[5]  the marker's lifetime in ms
//
// Returns the number moved.
var promoteJobsScript = redis.NewScript(luaJob + `
jp, ip = ARGV[3], ARGV[4]
local done = redis.call('GET', KEYS[4])
if done then return tonumber(done) end
local limit = tonumber(ARGV[2])
local r = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, limit)
local s = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, limit)
if #r == 0 and #s == 0 then return 0 end
local i, j, n, t = 1, 1, 0, clock()
while n < limit and (i <= #r or j <= #s) do
  local m, from
  if j > #s or (i <= #r and tonumber(r[i + 1]) <= tonumber(s[j + 1])) then
    m, from, i = r[i], KEYS[1], i + 2
  else
    m, from, j = s[j], KEYS[2], j + 2
  end
  redis.call('LPUSH', KEYS[3], m)
  redis.call('ZREM', from, m)
  topending(m, t)
  n = n + 1
end
redis.call('SET', KEYS[4], n, 'PX', ARGV[5])
return n
`)
