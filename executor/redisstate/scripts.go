package redisstate

import (
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
)

// putCheckpointScript is the checkpoint compare-and-set. It reads only the stored value's
// first bytes (GETRANGE 0..95: `{"version":N,"lastCompletedStageIndex":I,`), never the whole
// document.
//
//	KEYS[1]  checkpoint key (Keys.Checkpoint)
//	ARGV[1]  expected version, decimal ("0": the key must not exist)
//	ARGV[2]  new lastCompletedStageIndex, decimal
//	ARGV[3]  the new JSON after its version field (executor.EncodeCheckpointBody)
//	ARGV[4]  TTL in milliseconds
//
// A stored checkpoint that is byte for byte the one this call writes (its body carries the
// call's savedAt, stamped per Put) is this call's own, written by a first copy of the command
// that go-redis sent again (internal/resend): the call answers OK with its version instead of
// PRECONDITION. The whole value is read only then, never on the common path.
//
// Returns {"OK", newVersion}; {"PRECONDITION", storedVersion} ("0" when missing);
// {"CONFLICT", storedIndex} (the index would go backwards); {"CORRUPT"} (the stored value is
// not a versioned checkpoint). Versions are decimal strings. A new checkpoint's version is the
// server clock in microseconds (TIME), each Put adds one: a checkpoint removed and created
// again never repeats a version a cache may hold (as long as the server clock does not step
// back further than the old checkpoint's lifetime of writes).
var putCheckpointScript = redis.NewScript(`
local head = redis.call('GETRANGE', KEYS[1], 0, 95)
local nv
if head == '' then
  if ARGV[1] ~= '0' then return {'PRECONDITION', '0'} end
  local t = redis.call('TIME')
  nv = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
else
  local v, i = string.match(head, '^{"version":(%d+),"lastCompletedStageIndex":(%-?%d+)')
  if not v then return {'CORRUPT'} end
  if v ~= ARGV[1] then
    if redis.call('GET', KEYS[1]) == '{"version":' .. v .. ',' .. ARGV[3] then return {'OK', v} end
    return {'PRECONDITION', v}
  end
  if tonumber(ARGV[2]) < tonumber(i) then return {'CONFLICT', i} end
  nv = string.format('%.0f', tonumber(v) + 1)
end
redis.call('SET', KEYS[1], '{"version":' .. nv .. ',' .. ARGV[3], 'PX', ARGV[4])
return {'OK', nv}
`)

// applyTaskScript folds one task event into the task projection hash (rules on
// executor.ProjectionStore).
//
//	KEYS[1]   task hash (Keys.Task)
//	ARGV[1]   TTL in milliseconds
//	ARGV[2]   kind: "created", "stage" or "status"
//	ARGV[3]   order key (executor.EventOrder); unused for "stage"
//	ARGV[4]   status to set (status kinds)
//	ARGV[5]   pauseRequested, "true" or "false"
//	ARGV[6]   taskId
//	ARGV[7]   tenantId ("" = not carried)
//	ARGV[8]   planId ("" = not carried)
//	ARGV[9]   stageNames JSON array ("" = not carried)
//	ARGV[10]  completed stage index ("stage")
//	ARGV[11]  event time, "2006-01-02T15:04:05" UTC
//
// Returns 1. Order keys and times are fixed-width, so string comparison orders them.
var applyTaskScript = redis.NewScript(`
local k = KEYS[1]
local f = redis.call('HMGET', k, 'lastCompletedStageIndex', 'eventOrder', 'updatedAt')
local set = {'taskId', ARGV[6]}
local function put(name, value) set[#set + 1] = name; set[#set + 1] = value end
if ARGV[7] ~= '' then put('tenantId', ARGV[7]) end
if ARGV[8] ~= '' then put('planId', ARGV[8]) end
if ARGV[2] == 'created' then
  if ARGV[9] ~= '' then put('stageNames', ARGV[9]) end
  put('createdAt', ARGV[11])
end
if ARGV[2] == 'stage' then
  if not f[1] or tonumber(ARGV[10]) > tonumber(f[1]) then put('lastCompletedStageIndex', ARGV[10]) end
else
  if not f[1] then put('lastCompletedStageIndex', '-1') end
  if not f[2] or ARGV[3] > f[2] then
    put('status', ARGV[4]); put('pauseRequested', ARGV[5]); put('eventOrder', ARGV[3])
  end
end
if not f[3] or ARGV[11] > f[3] then put('updatedAt', ARGV[11]) end
redis.call('HSET', k, unpack(set))
redis.call('PEXPIRE', k, ARGV[1])
return 1
`)

// applyPlanScript folds one plan event into the plan projection hash.
//
//	KEYS[1]  plan hash (Keys.Plan)
//	ARGV[1]  TTL in milliseconds
//	ARGV[2]  "1" for PlanReady (sets createdAt), else "0"
//	ARGV[3]  order key (executor.EventOrder)
//	ARGV[4]  status to set
//	ARGV[5]  progress, decimal
//	ARGV[6]  planId
//	ARGV[7]  taskIds JSON array ("" = not carried)
//	ARGV[8]  maxConcurrency ("" = not carried)
//	ARGV[9]  event time, "2006-01-02T15:04:05" UTC
//
// Returns 1.
var applyPlanScript = redis.NewScript(`
local k = KEYS[1]
local f = redis.call('HMGET', k, 'eventOrder', 'updatedAt')
local set = {'planId', ARGV[6]}
local function put(name, value) set[#set + 1] = name; set[#set + 1] = value end
if ARGV[7] ~= '' then put('taskIds', ARGV[7]) end
if ARGV[8] ~= '' then put('maxConcurrency', ARGV[8]) end
if ARGV[2] == '1' then put('createdAt', ARGV[9]) end
if not f[1] or ARGV[3] > f[1] then
  put('status', ARGV[4]); put('progress', ARGV[5]); put('eventOrder', ARGV[3])
end
if not f[2] or ARGV[9] > f[2] then put('updatedAt', ARGV[9]) end
redis.call('HSET', k, unpack(set))
redis.call('PEXPIRE', k, ARGV[1])
return 1
`)

// takeControlsScript reads and deletes an instance's control inbox, once per call
// (resend.Once): a copy that go-redis sends again returns the commands the first run took,
// which would otherwise be deleted and never applied.
//
//	KEYS[1]  the control inbox LIST (Keys.Control)
//
// Returns the inbox's entries, oldest first.
var takeControlsScript = resend.Once(`
local cmds = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return cmds
`)

// sendControlScript appends one command to an instance's control inbox and sets the inbox's
// TTL, once per call (resend.Once): a copy that go-redis sends again appends nothing.
//
//	KEYS[1]  the control inbox LIST (Keys.Control)
//	ARGV[1]  the command, JSON
//	ARGV[2]  the inbox's TTL in ms
//
// Returns 1.
var sendControlScript = resend.Once(`
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)
