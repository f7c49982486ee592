package streamsource

import (
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
)

// Detail is the streams source's own progress in its Status.
type Detail struct {
	// Tombstones counts the tombstone entries acknowledged without a change.
	Tombstones int64
}

// Status is the source's progress: its tombstones. It keeps no position (the consumer group
// does, in Redis) and does not measure its lag.
func (s *Source) Status() index.SourceStatus {
	return index.SourceStatus{Name: "streams", Kind: index.SourcePulled, Detail: Detail{Tombstones: s.Tombstones.Load()}}
}

// Health is ok: a failed read is logged and retried by Run, and the entries it did not
// acknowledge stay pending.
func (s *Source) Health() index.SourceHealth { return index.SourceHealth{State: component.StateOK} }
