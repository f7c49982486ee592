package mysqlsource

import (
	"fmt"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
)

// Detail is the binlog source's own progress in its Status.
type Detail struct {
	// PendingEvents, EventsPerSecond, SnapshotEstimate, SnapshotPercent and Streaming are the
	// methods of the same names.
	PendingEvents    int64
	EventsPerSecond  float64
	SnapshotEstimate int64
	SnapshotPercent  float64
	Streaming        bool
	// Fence is the binlog lease's fence while this instance reads the binlog, 0 otherwise;
	// Standby whether another instance held the lease at the last try.
	Fence   int64
	Standby bool
}

// Status is the source's progress: the last applied position, the snapshot's rows, the row
// changes applied from the stream, and its lag in seconds and in binary log bytes.
func (s *Source) Status() index.SourceStatus {
	fence, _ := s.Leader()
	st := index.SourceStatus{Name: "mysql", Kind: index.SourcePulled, Events: s.Events.Load(), Copied: s.SnapshotRows.Load(),
		Lag: index.SourceLag{Seconds: s.LagSeconds(), Behind: s.LagBytes(), Unit: index.LagBytes},
		Detail: &Detail{PendingEvents: s.PendingEvents(), EventsPerSecond: s.EventsPerSecond(), SnapshotEstimate: s.SnapshotEstimate(),
			SnapshotPercent: s.SnapshotPercent(), Streaming: s.Streaming(), Fence: fence, Standby: s.Standby()}}
	if p := s.Position(); p.File != "" {
		st.Position = p.String()
	}
	return st
}

// Health is ok, its reason whether this instance reads the binlog: one instance at a time
// does, the others stand by.
func (s *Source) Health() index.SourceHealth {
	h := index.SourceHealth{State: component.StateOK}
	switch fence, ok := s.Leader(); {
	case ok:
		h.Reason = fmt.Sprintf("reading the binlog (fence %d)", fence)
	case s.Standby():
		h.Reason = "standby: another instance holds the binlog lease"
	default:
		h.Reason = "not reading the binlog: acquiring the lease (see the log if Redis fails)"
	}
	return h
}
