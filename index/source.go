package index

import (
	"context"

	"github.com/redstate/redstate/component"
)

// Source is one change source feeding an Indexer: the HTTP ingest path (PushSource), Redis
// Streams (streamsource), Kafka (kafkasource), PostgreSQL logical decoding (pgsource) and the
// MySQL/MariaDB binary log (mysqlsource). A process runs each of its sources with Run and reads
// their Status and Health at any time, from any goroutine.
type Source interface {
	// Run feeds the index until ctx ends, then returns nil. A failure of the upstream or of the
	// store is logged and retried inside Run (Health says so meanwhile where the source tracks
	// it), and a change is acknowledged upstream only once applied, so stopping at any point
	// loses nothing: what was not acknowledged is read again. A non-nil error means the source
	// stopped for good before ctx ended (its client options were refused: EINVALID); the caller
	// logs it.
	Run(ctx context.Context) error
	// Status is the source's progress now.
	Status() SourceStatus
	// Health is the source's health now.
	Health() SourceHealth
}

// SourceKind says how a source gets its changes.
type SourceKind string

const (
	// SourcePulled: the source reads an upstream (a log, a topic, streams) and keeps a
	// position in it, so it can fall behind; GET /v1/index/status lists these.
	SourcePulled SourceKind = "pulled"
	// SourcePushed: producers send changes (POST /v1/index/events); there is no upstream
	// position to be behind, and what a request carries is applied before it is answered.
	SourcePushed SourceKind = "pushed"
)

// LagUnit is the unit of SourceLag.Behind.
type LagUnit string

const (
	// LagNone: the source does not measure what it has not yet applied (pushed changes,
	// Redis Streams).
	LagNone LagUnit = ""
	// LagBytes: bytes of the upstream's log between the applied position and its end
	// (PostgreSQL WAL, the MySQL binary log). The log holds every table's changes, the
	// followed tables' or not, so bytes are the honest measure: a count of pending row
	// changes would need the log decoded.
	LagBytes LagUnit = "bytes"
	// LagRecords: records between the applied offset and the end (Kafka, over the partitions
	// this instance owns).
	LagRecords LagUnit = "records"
)

// SourceLag is how far a source is behind its upstream. Seconds is the one measure in the same
// unit for every source that timestamps its changes; Behind is the backlog in the unit the
// upstream counts in, named by Unit, never converted (bytes of a log and records of a topic
// are not comparable).
type SourceLag struct {
	// Seconds is the age of the last applied change when it was applied (0: caught up, or the
	// source does not know its changes' commit times: Kafka, Redis Streams, pushed changes).
	Seconds float64
	// Behind is what the upstream holds that is not yet applied, in Unit, as of the source's
	// last measurement (0 with LagNone).
	Behind int64
	// Unit is Behind's unit.
	Unit LagUnit
}

// SourceStatus is a source's progress, common to every source, plus its own Detail.
type SourceStatus struct {
	// Name names the source as the API and metrics do: "http", "postgres", "mysql", "streams"
	// or "kafka".
	Name string
	// Kind says how the source gets its changes.
	Kind SourceKind
	// Position is the last applied upstream position in the upstream's own notation when the
	// source keeps one in memory ("file:pos" of the binary log); "" otherwise (Kafka's offsets
	// are per partition, in Detail).
	Position string
	// Events counts the row changes applied since the process started (0 where the source
	// counts something else: Kafka records and Redis Streams entries, in Detail).
	Events int64
	// Copied counts the rows the initial snapshot (backfill) copied since the process started
	// (0 for sources without one).
	Copied int64
	// Lag is how far the source is behind.
	Lag SourceLag
	// Detail is the source's own progress (nil when it has none beyond the above): a
	// *mysqlsource.Detail, a *kafkasource.Detail, a streamsource.Detail or a PushDetail.
	Detail any
}

// SourceHealth is a source's health in component.Status's vocabulary: ok, degraded (failing and
// retrying) or off (not running), with the reason an operator reads.
type SourceHealth struct {
	// State is component.StateOK, StateDegraded or StateOff.
	State component.State
	// Reason says why (a failure, a standby); "" when there is nothing to say.
	Reason string
}
