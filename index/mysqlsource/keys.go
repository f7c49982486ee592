package mysqlsource

import "github.com/redstate/redstate/index"

// Keys are the Redis keys of the source's state, built by index.NewMySQLSourceKeys (the
// layout is documented there).
type Keys = index.MySQLSourceKeys

// NewKeys returns the source's keys under prefix, an index's SourceKeyPrefix.
func NewKeys(prefix string) Keys { return index.NewMySQLSourceKeys(prefix) }

// KeysOf returns the keys of the MySQL source of ix.
func KeysOf(ix *index.Indexer) Keys { return NewKeys(ix.SourceKeyPrefix()) }
