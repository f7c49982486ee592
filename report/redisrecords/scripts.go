package redisrecords

import "github.com/redis/go-redis/v9"

// Every write is one of these scripts, so that a record's hash and the generating index
// change together. All keys are passed in KEYS and share one hash tag on Cluster (Keys).

// recordPutScript creates (mode "create") or overwrites (mode "submit") a record and keeps the
// generating index in step.
//
//	KEYS[1]  record HASH (Keys.Record)
//	KEYS[2]  generating ZSET (Keys.Generating)
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
// in status n, not 1 or 2); nothing changes on the last two. A record that holds this call's
// status and updatedAt (nanoseconds: one per call) was written by a first copy of the call
// that go-redis sent again (internal/resend): the copy answers "OK", not "EXISTS" or
// "STATUS:3" for a create or submit that took effect. recordUpdateScript needs no such check:
// its copy sets the same fields again.
var recordPutScript = redis.NewScript(`
local function own()
  local f = redis.call('HMGET', KEYS[1], 'status', 'updatedAt')
  return f[1] == ARGV[3] and f[2] == ARGV[5]
end
if ARGV[2] == 'create' and redis.call('EXISTS', KEYS[1]) == 1 then
  if own() then return 'OK' end
  return 'EXISTS'
end
if ARGV[2] == 'submit' then
  local cur = redis.call('HGET', KEYS[1], 'status')
  if cur and cur ~= '1' and cur ~= '2' then
    if own() then return 'OK' end
    return 'STATUS:' .. cur
  end
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
