package pgsource

import (
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
)

// Status is the source's progress: the backfilled rows, the row changes applied from the
// stream, and its lag in seconds and in WAL bytes.
func (s *Source) Status() index.SourceStatus {
	return index.SourceStatus{Name: "postgres", Kind: index.SourcePulled, Events: s.Events.Load(), Copied: s.BackfilledRows.Load(),
		Lag: index.SourceLag{Seconds: s.LagSeconds(), Behind: s.LagBytes(), Unit: index.LagBytes}}
}

// Health is ok: failures are logged and retried by Run (the log says why the source is
// behind; LagBytes and LagSeconds show how much).
func (s *Source) Health() index.SourceHealth { return index.SourceHealth{State: component.StateOK} }
