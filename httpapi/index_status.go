package httpapi

import (
	"net/http"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// IndexSourceStatus is one change source's progress (GET /v1/index/status).
type IndexSourceStatus struct {
	// Name is the source: "postgres", "mysql", "streams" or "kafka".
	Name string `json:"name"`
	// BackfilledRows is how many rows the initial copy wrote (postgres, mysql).
	BackfilledRows int64 `json:"backfilledRows"`
	// LagBytes is the WAL (postgres) or binary log (mysql) not yet applied at the last read;
	// LagSeconds the age of the last applied commit when it was applied.
	LagBytes   int64   `json:"lagBytes"`
	LagSeconds float64 `json:"lagSeconds"`
	// LagRecords is how many records are not yet applied (kafka: over the partitions this
	// instance owns, as of their last fetch).
	LagRecords int64 `json:"lagRecords"`
	// Events is how many row changes the stream applied since the process started (postgres,
	// mysql).
	Events int64 `json:"events"`
	// The binlog source's progress (mysql; omitted when zero): Position is the last applied
	// "file:pos"; PendingEvents the row changes read and not yet applied; EventsPerSecond the
	// applied rate over the last seconds; SnapshotRowsEstimate the snapshot's expected rows and
	// SnapshotPercent its progress (100 once complete); Streaming whether the binlog is being
	// read now.
	Position             string  `json:"position,omitempty"`
	PendingEvents        int64   `json:"pendingEvents,omitempty"`
	EventsPerSecond      float64 `json:"eventsPerSecond,omitempty"`
	SnapshotRowsEstimate int64   `json:"snapshotRowsEstimate,omitempty"`
	SnapshotPercent      float64 `json:"snapshotPercent,omitempty"`
	Streaming            bool    `json:"streaming,omitempty"`
}

// indexTableStatus is one declared table's counters.
type indexTableStatus struct {
	DB      string `json:"db"`
	Table   string `json:"table"`
	Applied int64  `json:"applied"`
	Stale   int64  `json:"stale"`
	Failed  int64  `json:"failed"`
}

// indexStatus answers the index counters of every instance sharing the store (as of their last
// flush, plus this instance's unflushed counts), scope "shared"; when the store cannot be read,
// this instance's counters since it started, scope "instance". Then this instance's sources'
// progress.
func (s *server) indexStatus(w http.ResponseWriter, r *http.Request) error {
	if s.index == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "the index block is not enabled on this server")
	}
	tables := []indexTableStatus{}
	scope := "shared"
	counters, err := s.index.SharedCounters(r.Context())
	if err != nil {
		s.logger.Warn("index status: shared counters unreadable; answering this instance's", "err", err)
		scope = "instance"
		counters = index.CounterSet{Tables: map[index.TableRef]index.Counters{}, Skipped: s.index.Skipped(), Unreadable: s.index.Unreadable()}
		for _, t := range s.index.Tables() {
			if st := s.index.Stats(t.DB, t.Table); st != nil {
				counters.Tables[index.TableRef{DB: t.DB, Table: t.Table}] = index.Counters{Applied: st.Applied.Load(), Stale: st.Stale.Load(), Failed: st.Failed.Load()}
			}
		}
	}
	for _, t := range s.index.Tables() {
		c := counters.Tables[index.TableRef{DB: t.DB, Table: t.Table}]
		tables = append(tables, indexTableStatus{DB: t.DB, Table: t.Table, Applied: c.Applied, Stale: c.Stale, Failed: c.Failed})
	}
	sources := []IndexSourceStatus{}
	if s.indexSources != nil {
		sources = append(sources, s.indexSources()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"scope": scope, "tables": tables, "skipped": counters.Skipped, "unreadable": counters.Unreadable, "sources": sources,
	})
	return nil
}
