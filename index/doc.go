// Package index is the change-data-capture tag index (docs/index.md): a database's row changes
// applied to Redis hashes so that "rows of table T matching conditions A, B, C" is one HGETALL.
//
// Tables are declared (TableSpec): the business key, the logical-delete column, the columns to
// keep with their types, and the index dimensions, each a combination of `code-column` parts
// (the seed's `las-72:cat-870:bra-3987`). Per row two kinds of keys exist (Keys):
//
//	{prefix}:{db}:{table}:fil-{id}             String: version and time of the last applied change and
//	                                           the index keys the row is in (RowValue; a tombstone after a delete)
//	{prefix}:{db}:{table}:{code-value}:...     Hash: business id → row JSON
//
// The seed's relation key kid-{id} (layout 1) is now part of the fil- value (layout 2): one row
// key read and written per change. Indexer.MigrateLayout moves the kid- keys of an index
// written before.
//
// A change is applied (Indexer.Apply, then Store.Apply) by the seed's steps 1-7 with a version
// compare-and-set: it takes effect only if its Version is newer than the stored one, so
// duplicated and out-of-order delivery converge to what in-order delivery gives; deletes keep
// the version key (a tombstone) so a late insert cannot resurrect a row; the relation lets a
// row leave the index keys it was in without a before-image; and each row's change is one atomic
// step (a Lua script on Redis). docs/index.md states the guarantees per topology.
//
// An Indexer (New, with the TableSpecs and Options) applies Changes (Indexer.Apply) and
// answers queries (Query, QueryBatch, QueryPage); ParseEvent and ParseEvents read native,
// Canal and Debezium events into Changes. Its Store has two backends of the same semantics,
// index/redisindex (Redis standalone, Sentinel or Cluster) and index/memindex (in memory);
// index/indextest is the conformance suite. Sources feed an Indexer without an HTTP call:
// index/streamsource (Redis Streams of Debezium Server), index/kafkasource (Canal's MQ mode,
// Debezium on Kafka Connect), index/pgsource (PostgreSQL logical decoding) and
// index/mysqlsource (the MySQL/MariaDB binary log). The Example applies Canal events on Redis
// through a go-redis client.
package index
