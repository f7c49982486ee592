package index

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/metrics"
)

// indexCollector exposes an Indexer's counters at scrape time:
//
//	redstate_index_events_total{table,outcome}   changes by table and outcome (applied, stale, failed)
//	redstate_index_events_skipped_total          changes of undeclared tables and DDL
//	redstate_index_events_unreadable_total       events that could not be parsed
type indexCollector struct {
	ix                          *Indexer
	events, skipped, unreadable *prometheus.Desc
}

// RegisterMetrics registers ix's metrics in m's registry (nothing when m or ix is nil).
func RegisterMetrics(m *metrics.Metrics, ix *Indexer) {
	if m == nil || ix == nil {
		return
	}
	m.Registry().MustRegister(&indexCollector{
		ix: ix,
		events: prometheus.NewDesc("redstate_index_events_total",
			"CDC index changes by table (db.table) and outcome: applied, stale (older than the stored version), failed (dead-lettered).",
			[]string{"table", "outcome"}, nil),
		skipped:    prometheus.NewDesc("redstate_index_events_skipped_total", "CDC events skipped: DDL and changes of undeclared tables.", nil, nil),
		unreadable: prometheus.NewDesc("redstate_index_events_unreadable_total", "CDC events that could not be parsed.", nil, nil),
	})
}

// Describe implements prometheus.Collector.
func (c *indexCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.skipped
	ch <- c.unreadable
}

// Collect implements prometheus.Collector.
func (c *indexCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.ix.Tables() {
		st := c.ix.Stats(t.DB, t.Table)
		name := t.DB + "." + t.Table
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(st.Applied.Load()), name, "applied")
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(st.Stale.Load()), name, "stale")
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(st.Failed.Load()), name, "failed")
	}
	ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(c.ix.Skipped()))
	ch <- prometheus.MustNewConstMetric(c.unreadable, prometheus.CounterValue, float64(c.ix.Unreadable()))
}

// RegisterSourceLag registers the gauges of one index source (e.g. "postgres"):
//
//	redstate_index_source_lag_seconds{source}      age of the last applied commit when it was applied
//	redstate_index_source_lag_bytes{source}        WAL or binary log bytes not yet applied
//	redstate_index_backfill_rows_total{source}     rows copied by the backfill
func RegisterSourceLag(m *metrics.Metrics, source string, lagSeconds, lagBytes, backfilled func() float64) {
	if m == nil {
		return
	}
	labels := prometheus.Labels{"source": source}
	m.Registry().MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "redstate_index_source_lag_seconds", Help: "Age of the last applied source commit when it was applied.", ConstLabels: labels}, lagSeconds),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "redstate_index_source_lag_bytes", Help: "Source changes not yet applied: PostgreSQL WAL bytes, MySQL binary log bytes.", ConstLabels: labels}, lagBytes),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "redstate_index_backfill_rows_total", Help: "Rows copied by the source's backfill.", ConstLabels: labels}, backfilled),
	)
}

// SourceProgress reads one index source's progress for RegisterSourceProgress; a nil
// func registers no metric.
type SourceProgress struct {
	// Events is the count of row changes applied from the stream.
	Events func() float64
	// PendingEvents is the count of row changes read from the source and not yet applied.
	PendingEvents func() float64
	// PositionFile and PositionOffset are the last applied position: the binary log's file
	// number and the byte offset in it.
	PositionFile, PositionOffset func() float64
	// SnapshotEstimate is the expected number of rows of the snapshot (backfill).
	SnapshotEstimate func() float64
}

// RegisterSourceProgress registers a source's progress (nothing when m is nil):
//
//	redstate_index_source_events_total{source}            row changes applied from the stream (rate: events/s)
//	redstate_index_source_pending_events{source}          row changes read, not yet applied
//	redstate_index_source_position_file{source}           file number of the last applied binlog position
//	redstate_index_source_position_bytes{source}          byte offset of the last applied binlog position
//	redstate_index_backfill_rows_estimate{source}         expected rows of the snapshot (its progress: rows_total / estimate)
func RegisterSourceProgress(m *metrics.Metrics, source string, p SourceProgress) {
	if m == nil {
		return
	}
	labels := prometheus.Labels{"source": source}
	gauge := func(name, help string, f func() float64) {
		if f != nil {
			m.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
		}
	}
	if p.Events != nil {
		m.Registry().MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "redstate_index_source_events_total",
			Help: "Row changes applied from the source's stream.", ConstLabels: labels}, p.Events))
	}
	gauge("redstate_index_source_pending_events", "Row changes read from the source and not yet applied.", p.PendingEvents)
	gauge("redstate_index_source_position_file", "File number of the last applied binary log position.", p.PositionFile)
	gauge("redstate_index_source_position_bytes", "Byte offset of the last applied binary log position in its file.", p.PositionOffset)
	gauge("redstate_index_backfill_rows_estimate", "Expected rows of the source's snapshot (information_schema estimate).", p.SnapshotEstimate)
}
