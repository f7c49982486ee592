package mysqlsource

import "github.com/redis/go-redis/v9"

// acquireScript takes the binlog lease (SET NX PX) and, only if it was free, issues the next
// fence in the same atomic step.
//
//	KEYS[1]  Keys.Lease
//	KEYS[2]  Keys.Fence
//	ARGV[1]  the new holder's token
//	ARGV[2]  lease TTL in milliseconds
//
// Returns the new fence (a positive integer) or 0 if another instance holds the lease. The
// fence is the larger of the counter plus one and the server clock in microseconds (TIME),
// stored back into the counter. A fence issued at server time T is at most T (one acquisition
// takes longer than 1 µs), so a later acquisition is above it whatever became of the counter:
// missing (first acquisition, FLUSHALL, restart without persistence) or behind (a failover
// that lost its last writes). Fences only grow as long as no master's clock is behind the
// clock of the master that issued an earlier fence by more than the time between the two
// acquisitions (NTP-synced servers; docs/resilience.md, "Fencing across failover").
var acquireScript = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local t = redis.call('TIME')
local f = tonumber(t[1]) * 1000000 + tonumber(t[2])
local c = tonumber(redis.call('GET', KEYS[2]))
if c and c >= f then f = c + 1 end
redis.call('SET', KEYS[2], string.format('%.0f', f))
return f
`)

// renewScript extends the lease if it still holds the token.
//
//	KEYS[1]  Keys.Lease
//	ARGV[1]  the holder's token
//	ARGV[2]  lease TTL in milliseconds
//
// Returns 1 if renewed, 0 if the lease is gone or held by another token.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// releaseScript deletes the lease if it still holds the token (a clean stop: the next instance
// takes over at its next attempt instead of after the TTL).
//
//	KEYS[1]  Keys.Lease
//	ARGV[1]  the holder's token
//
// Returns 1 if deleted, 0 otherwise.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// fencedSetScript sets a string key only while the lease holds the writer's token (the
// position after a batch, the position at the end of the snapshot).
//
//	KEYS[1]  Keys.Lease
//	KEYS[2]  the key (Keys.Position)
//	ARGV[1]  the writer's token
//	ARGV[2]  the value
//
// Returns 1 if written, 0 if refused.
var fencedSetScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`)

// fencedHSetScript sets one field of a hash only while the lease holds the writer's token (the
// snapshot's progress).
//
//	KEYS[1]  Keys.Lease
//	KEYS[2]  the hash (Keys.Progress)
//	ARGV[1]  the writer's token
//	ARGV[2]  the field
//	ARGV[3]  the value
//
// Returns 1 if written, 0 if refused.
var fencedHSetScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
`)

// snapshotStartScript records a new snapshot's position and clears the progress of any older
// one, only while the lease holds the writer's token.
//
//	KEYS[1]  Keys.Lease
//	KEYS[2]  Keys.Snapshot
//	KEYS[3]  Keys.Progress
//	ARGV[1]  the writer's token
//	ARGV[2]  the snapshot's position ("file:pos")
//
// Returns 1 if written, 0 if refused.
var snapshotStartScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[3])
redis.call('SET', KEYS[2], ARGV[2])
return 1
`)

// resnapshotScript forgets the recorded position, the snapshot and its progress, and frees the
// lease, so that the reader's next fenced write or renewal fails and whoever acquires the
// lease next takes a new snapshot.
//
//	KEYS[1]  Keys.Position
//	KEYS[2]  Keys.Snapshot
//	KEYS[3]  Keys.Progress
//	KEYS[4]  Keys.Lease
//
// Returns what was deleted: {position, snapshot position, tables in the progress hash, lease
// holder's token}, "" (0 for the count) for what did not exist.
var resnapshotScript = redis.NewScript(`
local pos = redis.call('GET', KEYS[1]) or ''
local snap = redis.call('GET', KEYS[2]) or ''
local tables = redis.call('HLEN', KEYS[3])
local holder = redis.call('GET', KEYS[4]) or ''
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return {pos, snap, tables, holder}
`)
