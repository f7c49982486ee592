package httpapi

import (
	"net/http"

	"github.com/redstate/redstate"
)

// IndexSourceStatus is one change source's progress (GET /v1/index/status).
type IndexSourceStatus struct {
	// Name is the source: "postgres" or "streams".
	Name string `json:"name"`
	// BackfilledRows is how many rows the initial copy wrote (postgres).
	BackfilledRows int64 `json:"backfilledRows"`
	// LagBytes is the WAL not yet applied at the last read; LagSeconds the age of the last
	// applied commit when it was applied (postgres).
	LagBytes   int64   `json:"lagBytes"`
	LagSeconds float64 `json:"lagSeconds"`
}

// indexTableStatus is one declared table's counters.
type indexTableStatus struct {
	DB      string `json:"db"`
	Table   string `json:"table"`
	Applied int64  `json:"applied"`
	Stale   int64  `json:"stale"`
	Failed  int64  `json:"failed"`
}

// indexStatus answers this instance's index counters since it started (per instance: every
// instance applies its own share of the events), and its sources' progress.
func (s *server) indexStatus(w http.ResponseWriter, r *http.Request) error {
	if s.index == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "the index block is not enabled on this server")
	}
	tables := []indexTableStatus{}
	for _, t := range s.index.Tables() {
		st := s.index.Stats(t.DB, t.Table)
		if st == nil {
			continue
		}
		tables = append(tables, indexTableStatus{DB: t.DB, Table: t.Table, Applied: st.Applied.Load(), Stale: st.Stale.Load(), Failed: st.Failed.Load()})
	}
	sources := []IndexSourceStatus{}
	if s.indexSources != nil {
		sources = append(sources, s.indexSources()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"tables": tables, "skipped": s.index.Skipped.Load(), "unreadable": s.index.Unreadable.Load(), "sources": sources,
	})
	return nil
}
