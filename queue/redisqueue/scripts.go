package redisqueue

import "github.com/redis/go-redis/v9"

// Every atomic step is one of these scripts. All keys a script touches are passed in KEYS (no
// key is ever built inside Lua) and share one hash tag on Cluster (queue.Keys,
// queue.RecordKeys). Scripts that need "now" for a lease take it in an ARGV slot: a Unix-ms
// number from Options.Now, or "" to read the Redis server clock with TIME, so that every host
// agrees on lease expiry (the default). Redis 7 replicates script effects, so TIME before a
// write is allowed.

// luaNow is the prelude defining now(i): ARGV[i] as a number, or the server clock in Unix ms
// when ARGV[i] is "".
const luaNow = `
local function now(i)
  if ARGV[i] ~= '' then return tonumber(ARGV[i]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

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
//	KEYS[1]  consumers ZSET
//	KEYS[2]  pending LIST
//	KEYS[3]  the consumer's processing LIST (Keys.Processing)
//	ARGV[1]  consumer id
//	ARGV[2]  now in Unix ms, or "" for the server clock
//	ARGV[3]  max (>= 1)
//
// Returns {"CONFLICT"} (no live lease: nothing moved) or {"OK", leaseLeftMs, raw...} with the
// moved jobs in pending order (none when the pending list is empty).
var dequeueScript = redis.NewScript(luaNow + `
local t = now(2)
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not deadline or tonumber(deadline) <= t then return {'CONFLICT'} end
local out = {'OK', tonumber(deadline) - t}
for _ = 1, tonumber(ARGV[3]) do
  local raw = redis.call('LMOVE', KEYS[2], KEYS[3], 'RIGHT', 'LEFT')
  if not raw then break end
  out[#out + 1] = raw
end
return out
`)

// releaseScript puts prefetched, never started jobs back at the head of the pending list: for
// each raw, last first, it removes one occurrence from the processing list (the oldest: LREM
// scans from the right) and, if it was there, RPUSHes it onto the pending list's head, so that
// ARGV[1] ends up dequeued first. Raws no longer in flight are skipped.
//
//	KEYS[1]  the consumer's processing LIST
//	KEYS[2]  pending LIST
//	ARGV     the raws, in delivery order
//
// Returns the number moved.
var releaseScript = redis.NewScript(`
local n = 0
for i = #ARGV, 1, -1 do
  if redis.call('LREM', KEYS[1], -1, ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[i])
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
//
// Returns the number of jobs moved.
var recoverScript = redis.NewScript(luaNow + `
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not deadline or tonumber(deadline) > now(2) then return 0 end
local n = 0
while redis.call('LMOVE', KEYS[3], KEYS[2], 'LEFT', 'RIGHT') do n = n + 1 end
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
var retryScript = redis.NewScript(`
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
var buryScript = redis.NewScript(`
if redis.call('LREM', KEYS[1], -1, ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1
`)

// promoteScript moves due retry entries, earliest due first (ties by member), to the tail
// (left end) of the pending list.
//
//	KEYS[1]  retry ZSET
//	KEYS[2]  pending LIST
//	ARGV[1]  now in Unix ms: entries with score <= now are due
//	ARGV[2]  limit (>= 1)
//
// Returns the number moved.
var promoteScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do
  redis.call('LPUSH', KEYS[2], m)
  redis.call('ZREM', KEYS[1], m)
end
return #due
`)

// requeueDeadScript moves one dead letter (the newest equal to raw) to the tail of the
// pending list.
//
//	KEYS[1]  dead LIST
//	KEYS[2]  pending LIST
//	ARGV[1]  raw
//
// Returns 1, or 0 when no dead letter equals raw.
var requeueDeadScript = redis.NewScript(`
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[1])
return 1
`)

// requeueAllDeadScript moves every dead letter, oldest first, to the tail of the pending list.
// It is O(dead letters) inside one script: an admin operation.
//
//	KEYS[1]  dead LIST
//	KEYS[2]  pending LIST
//
// Returns the number moved.
var requeueAllDeadScript = redis.NewScript(`
local n = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT') do n = n + 1 end
return n
`)

// purgeDeadScript deletes the dead-letter list.
//
//	KEYS[1]  dead LIST
//
// Returns the number of dead letters deleted.
var purgeDeadScript = redis.NewScript(`
local n = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1])
return n
`)

// recordPutScript creates (mode "create") or overwrites (mode "submit") a record and keeps the
// generating index in step.
//
//	KEYS[1]  record HASH (RecordKeys.Record)
//	KEYS[2]  generating ZSET (RecordKeys.Generating)
//	ARGV[1]  record id (index member)
//	ARGV[2]  mode: "create" (fails if the record exists) or "submit" (replaces a record in
//	         status 1 or 2; fails on any other status)
//	ARGV[3]  status
//	ARGV[4]  answers JSON, "" for none
//	ARGV[5]  updatedAt (RFC 3339, stored verbatim)
//	ARGV[6]  updatedAt in Unix ms (index score)
//	ARGV[7]  retention in ms (PEXPIRE)
//
// Returns "OK", "EXISTS" (create on an existing record) or "STATUS:<n>" (submit on a record
// in status n, not 1 or 2); nothing changes on the last two.
var recordPutScript = redis.NewScript(`
if ARGV[2] == 'create' and redis.call('EXISTS', KEYS[1]) == 1 then return 'EXISTS' end
if ARGV[2] == 'submit' then
  local cur = redis.call('HGET', KEYS[1], 'status')
  if cur and cur ~= '1' and cur ~= '2' then return 'STATUS:' .. cur end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'updatedAt', ARGV[5])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'answers', ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
if ARGV[3] == '3' then
  redis.call('ZADD', KEYS[2], ARGV[6], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 'OK'
`)

// recordUpdateScript changes an existing record and keeps the generating index in step.
//
//	KEYS[1]  record HASH
//	KEYS[2]  generating ZSET
//	ARGV[1]  record id (index member)
//	ARGV[2]  mode: "result" (status 4, result = ARGV[3], error cleared), "failed" (status 5,
//	         error = ARGV[3], result cleared) or "reset" (only from status 3 or 5: status 3,
//	         result and error cleared)
//	ARGV[3]  result JSON or failure reason ("" for none)
//	ARGV[4]  updatedAt (RFC 3339)
//	ARGV[5]  updatedAt in Unix ms (index score)
//	ARGV[6]  retention in ms (PEXPIRE)
//
// Returns {"OK", status, answers, result, error, updatedAt} (absent fields as ""),
// {"NOTFOUND"}, or {"CONFLICT", status} (reset from another status; nothing changed).
var recordUpdateScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then return {'NOTFOUND'} end
local status
if ARGV[2] == 'result' then
  status = '4'
  redis.call('HSET', KEYS[1], 'result', ARGV[3])
  redis.call('HDEL', KEYS[1], 'error')
elseif ARGV[2] == 'failed' then
  status = '5'
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[3]) else redis.call('HDEL', KEYS[1], 'error') end
  redis.call('HDEL', KEYS[1], 'result')
else
  if cur ~= '3' and cur ~= '5' then return {'CONFLICT', cur} end
  status = '3'
  redis.call('HDEL', KEYS[1], 'result', 'error')
end
redis.call('HSET', KEYS[1], 'status', status, 'updatedAt', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
if status == '3' then
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
local f = redis.call('HMGET', KEYS[1], 'answers', 'result', 'error')
return {'OK', status, f[1] or '', f[2] or '', f[3] or '', ARGV[4]}
`)

// recordSweepScript drops a record's generating-index entry when the record has expired (its
// hash is gone); atomic with respect to writers, which update both keys in one script.
//
//	KEYS[1]  record HASH
//	KEYS[2]  generating ZSET
//	ARGV[1]  record id
//
// Returns 1 if the entry was dropped, else 0.
var recordSweepScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
return redis.call('ZREM', KEYS[2], ARGV[1])
`)
