package lease

import "github.com/redis/go-redis/v9"

// acquireScript takes a lease (SET NX PX) and, only if it was free, issues the next fence in
// the same atomic step.
//
//	KEYS[1]  the lease key (Keys.Lease)
//	KEYS[2]  the fence counter (Keys.Fence: same Cluster slot as KEYS[1])
//	ARGV[1]  the new holder's token
//	ARGV[2]  lease TTL in milliseconds
//	ARGV[3]  counter TTL in milliseconds (CounterTTL of the lease's), set at every acquisition
//
// Returns the new fence (a positive integer) or 0 if another token holds the lease. A lease
// held with this very token (unique per acquisition) was taken by a first copy of this call
// that go-redis sent again (internal/resend): the call answers with the fence that copy issued,
// from the counter, rather than 0 for a lease it holds.
//
// The fence is the larger of the counter plus one and the server clock in microseconds (TIME),
// stored back into the counter (one SET ... GET writes the clock and returns the counter; a
// second SET corrects it in the rare case the counter was ahead). The clock is written by
// clock_micros (clockMicrosLua). A fence issued at server time
// T is at most T (one acquisition takes longer than 1 µs), so the clock alone puts a later
// acquisition above it, whatever became of the counter: missing (first acquisition, FLUSHALL,
// restart without persistence, expiry) or behind (a failover that lost its last writes: the
// promoted replica holds an older value). Fences strictly increase per lease as long as no
// master's clock is behind the clock of the master that issued an earlier fence by more than
// the time between the two acquisitions (servers synced by NTP; a failover takes seconds).
var acquireScript = redis.NewScript(clockMicrosLua + `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if redis.call('GET', KEYS[1]) == ARGV[1] then return tonumber(redis.call('GET', KEYS[2])) or 0 end
  return 0
end
local t = redis.call('TIME')
local f = t[1] * 1000000 + t[2]
local c = tonumber(redis.call('SET', KEYS[2], clock_micros(t), 'PX', ARGV[3], 'GET'))
if c and c >= f then
  f = c + 1
  redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', ARGV[3])
end
return f
`)

// clockMicrosLua defines clock_micros(t): the reply of TIME (seconds, microseconds) as one
// decimal number of microseconds, the seconds joined to the microseconds padded to six digits.
// Joining strings costs the server about a fifth of string.format('%.0f', ...) on the sum.
const clockMicrosLua = `
local function clock_micros(t) return t[1] .. string.sub('00000', #t[2]) .. t[2] end
`

// renewScript sets a lease's TTL only while it holds the holder's token (compare-and-expire).
// A copy that go-redis sends again sets the same TTL again.
//
//	KEYS[1]  the lease key (Keys.Lease)
//	ARGV[1]  the holder's token
//	ARGV[2]  new TTL in milliseconds
//
// Returns 1 if renewed, 0 if the lease is gone or held by another token.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// deleteIfScript deletes a key only while it holds the given value (compare-and-delete): a
// lease's release, and DeleteIf. A copy that go-redis sends again finds the key gone (or held
// by the next holder) and deletes nothing.
//
//	KEYS[1]  the key (Keys.Lease for a lease)
//	ARGV[1]  the value it must hold (the holder's token)
//
// Returns 1 if deleted, 0 otherwise.
var deleteIfScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
