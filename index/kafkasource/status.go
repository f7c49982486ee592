package kafkasource

import (
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
)

// Detail is the Kafka source's own progress in its Status.
type Detail struct {
	// Records, Tombstones and DeadLetters are the counters of the same names.
	Records, Tombstones, DeadLetters int64
	// Group is the whole group's lag as last read (GroupLag); Timing the group timing.
	Group  GroupLag
	Timing GroupTiming
}

// Status is the source's progress: its lag in records over the partitions this instance owns
// (Lag), and the group as last read in Detail.
func (s *Source) Status() index.SourceStatus {
	var behind int64
	for _, n := range s.Lag() {
		behind += n
	}
	return index.SourceStatus{Name: "kafka", Kind: index.SourcePulled, Lag: index.SourceLag{Behind: behind, Unit: index.LagRecords},
		Detail: &Detail{Records: s.Records.Load(), Tombstones: s.Tombstones.Load(), DeadLetters: s.DeadLetters.Load(),
			Group: s.GroupLag(), Timing: s.GroupTiming()}}
}

// Health is degraded while polls fail (Failure), ok otherwise.
func (s *Source) Health() index.SourceHealth {
	if f := s.Failure(); f != "" {
		return index.SourceHealth{State: component.StateDegraded,
			Reason: "the Kafka source is failing (" + f + "), retrying; nothing is committed past what is applied"}
	}
	return index.SourceHealth{State: component.StateOK}
}
