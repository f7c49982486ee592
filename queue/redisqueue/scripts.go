package redisqueue

import (
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
)

// Every atomic step is one of these scripts. All keys a script touches are passed in KEYS (no
// key is ever built inside Lua) and share one hash tag on Cluster (queue.Keys). Scripts that need "now" for a lease take it in an ARGV slot: a Unix-ms
// number from Options.Now, or "" to read the Redis server clock with TIME, so that every host
// agrees on lease expiry (the default). Redis 7 replicates script effects, so TIME before a
// write is allowed.
//
// go-redis sends a command again when its first attempt got no answer, and the first copy may
// have run (see internal/resend). Every script that would do something else the second time
// (move, push or count again, or answer "not in flight" for the job it has just settled) is a
// resend.Once script: its last KEY is a call marker (Keys.Once of a fresh token) and its last
// ARGV the marker's lifetime, which the KEYS/ARGV lists below leave out. A copy of the call finds
// the marker and returns the first run's reply. The enqueue script marks the job id instead.
// Heartbeat and the lease listing are idempotent as they are.

// luaNow is the prelude defining now(i): ARGV[i] as a number, or the server clock in Unix ms
// when ARGV[i] is "".
const luaNow = `
local function now(i)
  if ARGV[i] ~= '' then return tonumber(ARGV[i]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// pushScript pushes a batch of messages onto the tail (left end) of the pending list, in order,
// each unless its marker exists, and sets the markers: a copy of the same call (go-redis
// re-sending it) or of the same job (its id enqueued again within the marker's lifetime) pushes
// nothing. The list gets exactly the bytes plain LPUSHes would have pushed, in the same order.
//
//	KEYS[1]    pending LIST
//	KEYS[2]    the call's marker (Keys.Once(token))
//	KEYS[2+i]  message i's marker: Keys.Enqueued(job id), or the call's marker for a message
//	           without a job id (the call's own marker then stands for it)
//	ARGV[1]    the markers' lifetime in ms
//	ARGV[1+i]  message i, encoded (or the raw string of EnqueueRaw)
//
// Returns, per message, 1 (pushed) or 0 (a copy: nothing pushed).
var pushScript = redis.NewScript(`
local out = {}
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then
  for i = 2, #ARGV do out[i - 1] = 0 end
  return out
end
local push = {}
for i = 2, #ARGV do
  local mark = KEYS[1 + i]
  if mark == KEYS[2] or redis.call('SET', mark, '1', 'NX', 'PX', ARGV[1]) then
    push[#push + 1] = ARGV[i]
    out[i - 1] = 1
  else
    out[i - 1] = 0
  end
end
if #push > 0 then redis.call('LPUSH', KEYS[1], unpack(push)) end
return out
`)

// ackScript removes in-flight entries of one consumer, each the oldest equal to its raw
// (LREM scans from the right). Once per call.
//
//	KEYS[1]  the consumer's processing LIST
//	ARGV     the delivered raw strings
//
// Returns, per raw, 1, or 0 when it was not in the processing list.
var ackScript = resend.Once(`
local out = {}
for i = 1, #ARGV do out[i] = redis.call('LREM', KEYS[1], -1, ARGV[i]) end
return out
`)

// heartbeatScript sets a consumer's lease deadline.
//
//	KEYS[1]  consumers ZSET (Keys.Consumers)
//	ARGV[1]  consumer id
//	ARGV[2]  lease in ms (>= 1)
//	ARGV[3]  now in Unix ms, or "" for the server clock
//
// Returns the new deadline in Unix ms.
var heartbeatScript = redis.NewScript(luaNow + `
local deadline = now(3) + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], deadline, ARGV[1])
return deadline
`)

// dequeueScript checks the consumer's lease and, if it is live, moves up to max jobs from the
// head of the pending list (its right end) to the left end of the consumer's in-flight list,
// one LMOVE each, without blocking: DequeueBatch's fast path (prefetch: one Lua call and one
// lease check for up to max jobs) and its lease check before every blocking BLMOVE.
//
// It marks its call like a resend.Once script, but the marker holds only what the reply needs
// to be rebuilt: "C" (no live lease) or the number n of jobs moved. A copy of the call returns
// the n jobs at the left end of the in-flight list, which are the ones the first run moved:
// only this consumer's dequeues push there, and its one dispatcher is still waiting for this
// call. (Settling removes the oldest equal entry, so never one of these undelivered jobs
// while an older copy of it is in flight; if the lease expired meanwhile and they were
// recovered, the copy returns what is left and the others are pending again.) Storing n rather
// than the jobs keeps the marker small on the hot path.
//
//	KEYS[1]  consumers ZSET
//	KEYS[2]  pending LIST
//	KEYS[3]  the consumer's processing LIST (Keys.Processing)
//	KEYS[4]  the call's marker (Keys.Once)
//	ARGV[1]  consumer id
//	ARGV[2]  now in Unix ms, or "" for the server clock
//	ARGV[3]  max (>= 1)
//	ARGV[4]  the marker's lifetime in ms
//	KEYS[5]  paused STRING: while it exists nothing is moved
//
// Returns {"CONFLICT"} (no live lease: nothing moved), {"PAUSED"} (the queue is paused: nothing
// moved) or {"OK", leaseLeftMs, raw...} with the moved jobs in pending order (none when the
// pending list is empty).
var dequeueScript = redis.NewScript(luaNow + `
local t = now(2)
local done = redis.call('GET', KEYS[4])
if done == 'C' then return {'CONFLICT'} end
if not done and redis.call('EXISTS', KEYS[5]) == 1 then return {'PAUSED'} end
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[1])
if done then
  local out = {'OK', math.max((tonumber(deadline) or t) - t, 0)}
  local n = tonumber(done)
  if n > 0 then
    local raws = redis.call('LRANGE', KEYS[3], 0, n - 1)
    for i = #raws, 1, -1 do out[#out + 1] = raws[i] end
  end
  return out
end
if not deadline or tonumber(deadline) <= t then
  redis.call('SET', KEYS[4], 'C', 'PX', ARGV[4])
  return {'CONFLICT'}
end
local out = {'OK', tonumber(deadline) - t}
for _ = 1, tonumber(ARGV[3]) do
  local raw = redis.call('LMOVE', KEYS[2], KEYS[3], 'RIGHT', 'LEFT')
  if not raw then break end
  out[#out + 1] = raw
end
redis.call('SET', KEYS[4], #out - 2, 'PX', ARGV[4])
return out
`)

// releaseScript puts prefetched, never started jobs back at the head of the pending list: for
// each raw, last first, it removes one occurrence from the processing list (the oldest: LREM
// scans from the right) and, if it was there, RPUSHes it onto the pending list's head, so that
// ARGV[1] ends up dequeued first. Raws no longer in flight are skipped.
//
// Records of released jobs turn pending.
//
//	KEYS[1]  the consumer's processing LIST
//	KEYS[2]  pending LIST
//	ARGV[1]  record prefix   ARGV[2]  index prefix
//	ARGV[3..]  the raws, in delivery order
//
// Returns the number moved.
var releaseScript = resend.Once(luaJob + `
jp, ip = ARGV[1], ARGV[2]
local n, t = 0, nil
for i = #ARGV, 3, -1 do
  if redis.call('LREM', KEYS[1], -1, ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[i])
    if string.sub(ARGV[i], 1, 7) == '{"Job":' then
      t = t or clock()
      topending(ARGV[i], t)
    end
    n = n + 1
  end
end
return n
`)

// expiredScript lists the consumers whose lease deadline has passed.
//
//	KEYS[1]  consumers ZSET
//	ARGV[1]  now in Unix ms, or "" for the server clock
//
// Returns the expired consumer ids, earliest deadline first.
var expiredScript = redis.NewScript(luaNow + `
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now(1))
`)

// recoverScript recovers one consumer: if its lease is (still) expired, it moves every job of
// its processing list back to the head of the pending list (the right end, which consumers
// take from) so that the oldest-dequeued job is dequeued next, and forgets the consumer. It
// re-checks the lease itself, so concurrent recoverers move each job once and a consumer that
// renewed its lease meanwhile keeps its jobs.
//
//	KEYS[1]  consumers ZSET
//	KEYS[2]  pending LIST
//	KEYS[3]  the consumer's processing LIST
//	ARGV[1]  consumer id
//	ARGV[2]  now in Unix ms, or "" for the server clock
//	ARGV[3]  record prefix   ARGV[4]  index prefix
//
// Returns the number of jobs moved; their records turn pending.
var recoverScript = resend.Once(luaNow + luaJob + `
jp, ip = ARGV[3], ARGV[4]
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not deadline or tonumber(deadline) > now(2) then return 0 end
local n, t = 0, clock()
while true do
  local m = redis.call('LMOVE', KEYS[3], KEYS[2], 'LEFT', 'RIGHT')
  if not m then break end
  topending(m, t)
  n = n + 1
end
redis.call('ZREM', KEYS[1], ARGV[1])
return n
`)

// retryScript takes a job out of a processing list and schedules its next attempt.
//
//	KEYS[1]  the consumer's processing LIST
//	KEYS[2]  retry ZSET (Keys.Retry)
//	ARGV[1]  the delivered raw string
//	ARGV[2]  due time in Unix ms (score)
//	ARGV[3]  the next message, encoded (member)
//
// Returns 1, or 0 when raw was not in the processing list (nothing changed).
var retryScript = resend.Once(`
if redis.call('LREM', KEYS[1], -1, ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
`)

// buryScript takes a job out of a processing list and puts a message at the head (left) of
// the dead-letter list.
//
//	KEYS[1]  the consumer's processing LIST
//	KEYS[2]  dead LIST (Keys.Dead)
//	ARGV[1]  the delivered raw string
//	ARGV[2]  the dead letter, encoded
//
// Returns 1, or 0 when raw was not in the processing list (nothing changed).
var buryScript = resend.Once(`
if redis.call('LREM', KEYS[1], -1, ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1
`)

// requeueDeadScript moves one dead letter (the newest equal to raw) to the tail of the
// pending list.
//
//	KEYS[1]  dead LIST
//	KEYS[2]  pending LIST
//	ARGV[1]  raw
//	ARGV[2]  record prefix   ARGV[3]  index prefix
//
// Returns 1, or 0 when no dead letter equals raw. A record of the job turns pending.
var requeueDeadScript = resend.Once(luaJob + `
jp, ip = ARGV[2], ARGV[3]
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[1])
topending(ARGV[1], clock())
return 1
`)

// requeueAllDeadScript moves every dead letter, oldest first, to the tail of the pending list.
// It is O(dead letters) inside one script: an admin operation.
//
//	KEYS[1]  dead LIST
//	KEYS[2]  pending LIST
//	ARGV[1]  record prefix   ARGV[2]  index prefix
//
// Returns the number moved. Records of the moved jobs turn pending.
var requeueAllDeadScript = resend.Once(luaJob + `
jp, ip = ARGV[1], ARGV[2]
local n, t = 0, clock()
while true do
  local m = redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT')
  if not m then break end
  topending(m, t)
  n = n + 1
end
return n
`)

// purgeDeadScript deletes the dead-letter list.
//
//	KEYS[1]  dead LIST
//
// Returns the number of dead letters deleted.
var purgeDeadScript = resend.Once(`
local n = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1])
return n
`)

// throughputScript adds job counts to one minute's hash and sets its TTL.
//
//	KEYS[1]  the minute's HASH (Keys.Throughput)
//	ARGV[1]  TTL in seconds
//	ARGV     then outcome, count pairs
//
// Returns 1.
var throughputScript = resend.Once(`
for i = 2, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`)
