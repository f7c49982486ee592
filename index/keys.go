package index

import (
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// DefaultPrefix is the seed's key prefix.
const DefaultPrefix = "las_im_data_sync"

// nullSegment stands for a NULL dimension value in a key ("las-~"): '~' is always
// percent-encoded in escaped values, so no value can produce it.
const nullSegment = "~"

// Keys builds every Redis key of one table, in one place:
//
//	{namespace}{prefix}:{db}:{table}:fil-{id}          version, change time and relation: the
//	                                                   index keys the row is in (RowValue);
//	                                                   a tombstone after a delete
//	{namespace}{prefix}:{db}:{table}:{code-value}:...  index hash
//	{namespace}{prefix}:{db}:{table}:truncated         version of the newest truncate
//	{namespace}{prefix}:{db}:{table}:layout            "2" once no layout-1 relation key is left
//
// Layout 1 (the seed's) kept the relation in a key of its own, kid-{id} (LegacyRelation); the
// stores still read and remove one where a row has it, and MigrateLayout moves them all.
//
// With HashTag, "{prefix}:{db}:{table}" is wrapped in braces so every key of the table shares
// one Redis Cluster slot. Ids and values are escaped (keyspace.EscapeSegment), so ':', '*',
// '{' or whitespace in data can neither forge another key nor widen a SCAN pattern.
type Keys struct {
	base string
}

// ValidatePrefix checks a key prefix: 1..100 characters from [A-Za-z0-9_:.-]. Errors: EINVALID.
func ValidatePrefix(prefix string) error {
	if prefix == "" || len(prefix) > 100 {
		return redstate.Errorf(redstate.EINVALID, "index prefix must be 1..100 characters")
	}
	if keyspace.InvalidIDByte(prefix, keyspace.NamePunct) >= 0 {
		return redstate.Errorf(redstate.EINVALID, "index prefix %q: only letters, digits and _:.- are allowed", prefix)
	}
	return nil
}

// NewKeys returns the keys of table db.table under p: the deployment's namespace (validated by
// the configuration: no braces, glob characters or whitespace), put before every key outside
// the hash tag ("nsq-{las_im_data_sync:db1:table1}:fil-10001"), and the index's prefix
// (DefaultPrefix when empty; it must pass ValidatePrefix). db and table pass
// TableSpec.Validate.
func NewKeys(p redstate.KeyPrefix, db, table string, hashTag bool) Keys {
	p = p.Or(DefaultPrefix)
	base := p.Block + ":" + db + ":" + table
	if hashTag {
		base = "{" + base + "}"
	}
	return Keys{base: p.Namespace + base}
}

// BlockKeys builds the index's keys that belong to no one table (P = namespace + prefix):
//
//	P:deadletter           List, changes that could not be applied (newest first, capped)
//	P:counters             Hash, applied/stale/failed counts per table, shared by instances
//	P:source:…             the sources' positions, leases and snapshot progress
//	                       (PostgresSourceKeys, MySQLSourceKeys)
type BlockKeys struct {
	base string
}

// NewBlockKeys returns the index's own keys under p (the namespace and the index's prefix,
// DefaultPrefix when empty).
func NewBlockKeys(p redstate.KeyPrefix) BlockKeys {
	return BlockKeys{base: p.Or(DefaultPrefix).String()}
}

// DeadLetter is the dead-letter list.
func (k BlockKeys) DeadLetter() string { return k.base + ":deadletter" }

// Counters is the hash of the shared applied/stale/failed counts.
func (k BlockKeys) Counters() string { return k.base + ":counters" }

// SourcePrefix is the prefix of the keys sources keep their positions under
// ("<namespace><prefix>:source:").
func (k BlockKeys) SourcePrefix() string { return k.base + ":source:" }

// Version returns the version key of row id.
func (k Keys) Version(id string) string { return k.base + ":fil-" + keyspace.EscapeSegment(id) }

// LegacyRelation returns row id's relation key of layout 1 (kid-): the JSON array of the
// index keys the row is in, which layout 2 keeps in the version key's value instead.
func (k Keys) LegacyRelation(id string) string { return k.base + ":kid-" + keyspace.EscapeSegment(id) }

// LegacyRelationPattern returns the SCAN pattern matching the table's layout-1 relation keys.
func (k Keys) LegacyRelationPattern() string { return k.base + ":kid-*" }

// LegacyRelationID returns the row id of a layout-1 relation key of the table; ok is false for
// another key.
func (k Keys) LegacyRelationID(key string) (id string, ok bool) {
	escaped, ok := strings.CutPrefix(key, k.base+":kid-")
	if !ok {
		return "", false
	}
	return keyspace.UnescapeSegment(escaped)
}

// TablePrefix is what every key of the table starts with ("<base>:"); a relation lists the
// row's index keys without it (EncodeRelation).
func (k Keys) TablePrefix() string { return k.base + ":" }

// Layout returns the table's layout key: "2" once MigrateLayout has moved every layout-1
// relation key (kid-) into its row's version key, so the stores stop looking for them. It has
// no '-', so no index key (code-value) can be it.
func (k Keys) Layout() string { return k.base + ":layout" }

// Index returns the index key of one combination: parts with their values (nil: NULL), in
// the combination's declared order.
func (k Keys) Index(parts []Part, values []*string) string {
	var b strings.Builder
	b.WriteString(k.base)
	for i, p := range parts {
		b.WriteByte(':')
		b.WriteString(p.Code)
		b.WriteByte('-')
		if values[i] == nil {
			b.WriteString(nullSegment)
		} else {
			b.WriteString(keyspace.EscapeSegment(*values[i]))
		}
	}
	return b.String()
}

// Pattern returns the SCAN pattern matching every key of the table.
func (k Keys) Pattern() string { return k.base + ":*" }

// Truncated returns the table's truncate key: the version of its newest truncate, below which
// no change of the table applies ("<version>|<stamp>", like a version key). It has no '-', so no
// index key (code-value) can be it.
func (k Keys) Truncated() string { return k.base + ":truncated" }

// VersionPattern returns the SCAN pattern matching the version keys of the table's rows.
func (k Keys) VersionPattern() string { return k.base + ":fil-*" }

// VersionID returns the row id of a version key of the table; ok is false for another key.
func (k Keys) VersionID(key string) (id string, ok bool) {
	escaped, ok := strings.CutPrefix(key, k.base+":fil-")
	if !ok {
		return "", false
	}
	return keyspace.UnescapeSegment(escaped)
}

// PostgresSourceKeys are the Redis keys of the PostgreSQL source following one replication
// slot (pgsource). Layout (P = BlockKeys.SourcePrefix, "<namespace><prefix>:source:"):
//
//	P pg:<slot>:position  String, the last applied LSN (wal2json)
//	P pg:<slot>:snapshot  String, the slot's consistent point: the backfilled rows' version
//	P pg:<slot>:backfill  Hash, followed table → last key copied ("\x00done" when complete),
//	                      and the backfill's fence (field "\x00fence")
//
// The keys carry no hash tag: only single-key commands and scripts touch them.
type PostgresSourceKeys struct {
	// Position is the last applied LSN (wal2json).
	Position string
	// Snapshot is the slot's consistent point, recorded when the source created the slot.
	Snapshot string
	// Backfill is a hash: followed table → last key copied, and the backfill's fence.
	Backfill string
}

// Postgres returns the keys of the PostgreSQL source following replication slot.
func (k BlockKeys) Postgres(slot string) PostgresSourceKeys {
	base := k.SourcePrefix() + "pg:" + slot
	return PostgresSourceKeys{Position: base + ":position", Snapshot: base + ":snapshot", Backfill: base + ":backfill"}
}

// MySQLSourceKeys are the Redis keys of the MySQL/MariaDB binlog source (mysqlsource).
// Layout (P = BlockKeys.SourcePrefix, "<namespace><prefix>:source:"):
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
type MySQLSourceKeys struct {
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

// MySQL returns the keys of the MySQL/MariaDB binlog source.
func (k BlockKeys) MySQL() MySQLSourceKeys {
	base := k.SourcePrefix() + "{mysql}:"
	return MySQLSourceKeys{Position: base + "position", Snapshot: base + "snapshot", Progress: base + "snapshot-progress",
		Lease: base + "lease", Fence: base + "fence"}
}
