package periodic

import (
	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
)

// DefaultBlock is the block prefix of the scheduler's keys when the KeyPrefix names none.
const DefaultBlock = "queue"

// Keys are the Redis keys of the periodic scheduler. They share the hash tag "{periodic}", so
// the lease and its fence counter hash to one Cluster slot, as the lease requires. Queue names
// cannot contain braces, so no queue's keys can meet them.
type Keys struct {
	// Lease holds the leading instance's token (lease.Keys.Lease).
	Lease string
	// Fence is the lease's fence counter (lease.Keys.Fence).
	Fence string
	// Ticks is the HASH of the entries' tick records: entry name → "<tick unix seconds>
	// <fence> <done 0|1> <claimed unix ms>" (RedisStore).
	Ticks string
}

// NewKeys returns the scheduler's keys under p: "<namespace><block>:{periodic}:lease", ":fence"
// and ":ticks", the block "queue" unless p names another.
func NewKeys(p redstate.KeyPrefix) Keys {
	base := p.Or(DefaultBlock).String() + ":{periodic}:"
	return Keys{Lease: base + "lease", Fence: base + "fence", Ticks: base + "ticks"}
}

// LeaseKeys returns the keys of the scheduler's lease.
func (k Keys) LeaseKeys() lease.Keys { return lease.Keys{Lease: k.Lease, Fence: k.Fence} }
