// Package resilientstore wraps the Redis buildstatus.Store in a circuit breaker and, with the
// "fallback" policy, an in-memory degraded mode that writes back to Redis when it returns
// (docs/resilience.md). It implements buildstatus.Store.
//
// # Policies
//
// fail-fast (default): every call goes through the breaker (internal/resilience) to Redis. While
// Redis is unreachable, or the breaker is open, calls fail with EUNAVAILABLE (HTTP 503). Nothing
// is buffered and nothing is ever answered from anywhere but Redis.
//
// fallback: a write (Save, UpdatePlatform, Delete) that fails with EUNAVAILABLE is applied to the
// memory store instead, its build id is recorded as pending, and the caller gets success.
//
//   - Only writes whose result does not depend on Redis's current value are accepted this way:
//     an unconditional Save, or an unconditional Delete (recorded as a tombstone with its time;
//     it succeeds even if the build did not exist in Redis). A conditional Save or Delete
//     (If-Match, If-None-Match) and an UpdatePlatform of a build that is not pending need the
//     current value and fail with EUNAVAILABLE.
//   - Every write, read and condition on a pending id is served by the memory store, even after
//     Redis is back, until the id is written back: a client reads its own writes.
//   - A read of an id that is not pending while Redis is unavailable fails with EUNAVAILABLE,
//     never with a false ENOTFOUND. GetMany is served only if every id is pending. List and
//     ListProject always need Redis; pages show the pending copy of a pending build that Redis
//     also holds (and hide it if it is a pending delete), but a build created during the outage
//     appears in listings only once written back.
//   - Watch merges the Redis stream with the memory stream; while Redis is unreachable the Redis
//     side is resubscribed every WriteBackInterval, and an EventGap marks each (re)subscription so
//     the watcher re-reads the build.
//
// # Write-back and ordering
//
// Every WriteBackInterval, when the breaker allows calls, each pending id is compared with Redis
// and resolved by NEWER WINS on updatedAt: the pending copy is written unless Redis's updatedAt
// is strictly later; a null updatedAt loses to a non-null one, and two nulls or equal times keep
// the pending copy. A tombstone deletes the build unless Redis's updatedAt is strictly later than
// the delete. The write is conditional (If-Match on the ETag just read, or If-None-Match when
// Redis has no value), so a write made concurrently by another process is never overwritten
// blindly: on a precondition failure the id stays pending and is compared again next round.
// Once an id's write-back has been applied (or superseded) and no newer local write arrived
// meanwhile, its memory copy and pending mark are dropped. A rewrite refreshes the build's TTL
// from the write-back time. Permanent rejections (ECONFLICT: the build belongs to another
// project in Redis; EINVALID) are logged at Error and dropped.
//
// Timestamps have whole-second resolution in the seed's format, so "newer" is decided per
// second; concurrent writers of the same build in different processes are ordered by their
// updatedAt, not by arrival.
//
// # Durability
//
// A write acknowledged while Redis served it is as durable as Redis makes it: with
// appendonly yes and appendfsync everysec (the recommended production setting) at most about one
// second of acknowledged writes can be lost on a Redis crash; with appendfsync always none; with
// persistence off, everything is lost on restart. A write acknowledged in fallback mode lives
// in this process's memory until it is written back; other processes see it only after that.
//
// Without a journal (Resilience.Journal empty, the default), if the process dies (crash,
// deploy, OOM kill) while Redis is down, those writes are lost; New logs a Warn saying so.
//
// With a journal, every change of the pending set is appended to a local file as a
// length-prefixed, CRC-32C-checksummed JSON record and fsync'ed before the write is
// acknowledged (concurrent writers share one fsync). New replays it (last record per id wins; a
// torn tail from a crash mid-append is truncated), so acknowledged fallback writes survive a
// crash or kill of the process and are lost only with the local disk. The journal is truncated
// when nothing is pending, compacted while an outage lasts, and locked against a second process.
// Close makes one last write-back attempt (bounded by 2 s) and leaves what is still pending in
// the journal. The pending count is exported as redstate_fallback_writes_pending.
package resilientstore
