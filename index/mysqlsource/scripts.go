package mysqlsource

import "github.com/redis/go-redis/v9"

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
