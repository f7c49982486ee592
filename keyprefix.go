package redstate

import (
	"fmt"

	"github.com/redstate/redstate/internal/keyspace"
)

// KeyPrefix is the one key rule: every Redis key of a block is <Namespace><Block><rest>.
// Namespace is the deployment's (the configuration's namespace, e.g. "prod-"; may be empty), so
// that environments sharing a Redis never see each other's keys; Block is the block's own
// prefix (its configuration's key-prefix, or a queue's name), "" meaning the block's default.
// A hash tag a block needs on Redis Cluster sits inside or after the Block part, never in the
// namespace, so the namespace never moves a key to another slot. Every block's NewKeys takes a
// KeyPrefix as its first argument and is the only place that block builds keys.
type KeyPrefix struct {
	// Namespace is the deployment's namespace, put before every key of every block.
	Namespace string
	// Block is the block's own prefix after the namespace; "" takes the block's default.
	Block string
}

// Prefix returns the KeyPrefix of a namespace and a block prefix.
func Prefix(namespace, block string) KeyPrefix { return KeyPrefix{Namespace: namespace, Block: block} }

// Or returns p with Block set to def when Block is empty.
func (p KeyPrefix) Or(def string) KeyPrefix {
	if p.Block == "" {
		p.Block = def
	}
	return p
}

// String is the whole prefix: Namespace followed by Block.
func (p KeyPrefix) String() string { return p.Namespace + p.Block }

// Validate checks that neither part holds whitespace, control characters, glob characters
// (* ? [ ] \) or braces: both go into every key and SCAN pattern, and a brace would bring a
// hash tag of its own. Errors: EINVALID naming the part.
func (p KeyPrefix) Validate() error {
	if err := keyspace.CheckPrefix(p.Namespace); err != nil {
		return Wrap(EINVALID, err, "namespace")
	}
	if err := keyspace.CheckPrefix(p.Block); err != nil {
		return Wrap(EINVALID, err, fmt.Sprintf("key prefix %q", p.Block))
	}
	return nil
}
