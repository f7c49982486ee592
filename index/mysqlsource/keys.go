package mysqlsource

import "github.com/redstate/redstate/index"

// Keys are the Redis keys of the source's state. NewKeys is the only place that builds them.
//
// Layout (P = the index's SourceKeyPrefix, "<namespace><prefix>:source:"):
//
//	P{mysql}:position           String, the last applied position "file:pos"
//	P{mysql}:snapshot           String, the position the snapshot was read at
//	P{mysql}:snapshot-progress  Hash, followed table → last key copied ("\x00done" when complete)
//	P{mysql}:lease              String, the reading instance's token, PX the lease TTL
//	P{mysql}:fence              String, a counter that grows at each acquisition of the lease,
//	                            PX 30 days after the last one (internal/lease)
//
// Every key carries the hash tag {mysql}, so they share one Redis Cluster slot and the source's
// scripts, which check the lease and write another key in one step, run on Cluster. A prefix
// that holds a hash tag of its own keeps them in one slot too: Redis hashes the first tag, the
// same in every key.
type Keys struct {
	// Position is the last applied position ("file:pos").
	Position string
	// Snapshot is the position the snapshot was read at.
	Snapshot string
	// Progress is a hash: followed table → last key copied ("\x00done" when complete).
	Progress string
	// Lease holds the token of the instance reading the binlog, with the lease's TTL.
	Lease string
	// Fence counts the acquisitions of the lease; it only grows.
	Fence string
}

// NewKeys returns the source's keys under prefix, an index's SourceKeyPrefix.
func NewKeys(prefix string) Keys {
	base := prefix + "{mysql}:"
	return Keys{Position: base + "position", Snapshot: base + "snapshot", Progress: base + "snapshot-progress",
		Lease: base + "lease", Fence: base + "fence"}
}

// KeysOf returns the keys of the MySQL source of ix.
func KeysOf(ix *index.Indexer) Keys { return NewKeys(ix.SourceKeyPrefix()) }
