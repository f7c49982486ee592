// Package resend makes redstate's Redis writes safe against the client sending them twice.
//
// go-redis sends a command again, on another connection, when its first attempt failed without
// an answer (a read timeout, a connection closed under it; redis.max-retries, default 1). The
// first copy may have run all the same: Redis stalled longer than the read timeout, or the reply
// was lost. Both copies then run. A write that is not idempotent (a push, an increment, a move,
// a compare-and-set whose second copy sees the first one's result) must therefore recognise its
// own copy. This package gives such writes a per-call marker: the caller draws a Token, the
// write's script stores its reply under a marker key derived from it (Once), and a copy that
// finds the marker returns the stored reply instead of running again. The marker lives for
// Window, longer than go-redis can still send a copy of the command.
package resend

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/keyspace"
)

// MinWindow is the shortest marker lifetime Window returns.
const MinWindow = 30 * time.Second

// unknownClientWindow is Window for a client whose options it cannot read.
const unknownClientWindow = 5 * time.Minute

// Window returns how long the markers of writes sent through c must live: twice the longest
// time go-redis can spend on one command, which is when its last copy can still reach the
// server. One attempt takes at most the dial, pool-wait, write and read timeouts plus the
// longest back-off between attempts; a command makes redis.max-retries + 1 attempts, and on
// Cluster each of its MaxRedirects + 1 tries does that on a node. Never less than MinWindow.
func Window(c redis.UniversalClient) time.Duration {
	var w time.Duration
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		w = attempts(o.MaxRetries) * attempt(o.DialTimeout, o.PoolTimeout, o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff)
	case *redis.ClusterClient:
		o := c.Options()
		w = attempts(o.MaxRetries) * time.Duration(max(o.MaxRedirects, 0)+1) *
			attempt(o.DialTimeout, o.PoolTimeout, o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff)
	default:
		return unknownClientWindow
	}
	return max(2*w, MinWindow)
}

// attempts is how many times a command is sent with retries configured as maxRetries (go-redis:
// -1 none).
func attempts(maxRetries int) time.Duration { return time.Duration(max(maxRetries, 0) + 1) }

// attempt sums the bounds of one attempt; a negative timeout (none) counts as zero.
func attempt(ds ...time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += max(d, 0)
	}
	return sum
}

// Token returns a new random id (128 bits in hex) naming one call of a write.
func Token() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// MarkerKey returns the marker key of the call token of a write on key: prefix, then a hash tag
// for key's Cluster slot, then token ("<prefix>{<tag>}:<token>"), so that a script may touch
// both on Cluster. prefix puts the marker in the block's key space (ACL patterns) and outside
// the patterns the block SCANs (e.g. "<namespace>:once:").
func MarkerKey(prefix, key, token string) string {
	return prefix + "{" + keyspace.SlotTag(keyspace.Slot(key)) + "}:" + token
}

// Once returns a script running the Lua body at most once per marker: the script's last KEY is
// the call's marker key (MarkerKey) and its last ARGV the marker's lifetime in milliseconds
// (Window); body sees KEYS and ARGV without them. The first run stores body's reply (any Lua
// value a script may return, msgpack-encoded) under the marker and returns it; a copy of the
// same call, finding the marker, returns the stored reply and changes nothing.
func Once(body string) *redis.Script {
	return redis.NewScript(`local marker = table.remove(KEYS)
local ttl = table.remove(ARGV)
local done = redis.call('GET', marker)
if done then return cmsgpack.unpack(done) end
local reply = (function()
` + body + `
end)()
redis.call('SET', marker, cmsgpack.pack(reply), 'PX', ttl)
return reply
`)
}

// Marker is the marker of one call of a Once script.
type Marker struct {
	// Key is the marker key (MarkerKey).
	Key string
	// Window is how long the marker lives (Window).
	Window time.Duration
}

// NewMarker returns the marker of a new call (a fresh Token) of a write on key, under prefix
// (MarkerKey), living for window.
func NewMarker(prefix, key string, window time.Duration) Marker {
	return Marker{Key: MarkerKey(prefix, key, Token()), Window: window}
}

// Keys returns a Once script's KEYS: keys, then the marker key.
func (m Marker) Keys(keys ...string) []string { return append(keys[:len(keys):len(keys)], m.Key) }

// Args returns a Once script's ARGV: args, then the marker's lifetime in milliseconds.
func (m Marker) Args(args ...any) []any {
	return append(args[:len(args):len(args)], max(m.Window.Milliseconds(), 1))
}
