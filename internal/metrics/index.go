package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/index"
)

// indexCollector exposes an Indexer's counters at scrape time:
//
//	redstate_index_events_total{table,outcome}   changes by table and outcome (applied, stale, failed)
//	redstate_index_events_skipped_total          changes of undeclared tables and DDL
//	redstate_index_events_unreadable_total       events that could not be parsed
type indexCollector struct {
	ix                          *index.Indexer
	events, skipped, unreadable *prometheus.Desc
}

// RegisterIndex registers ix's metrics in m's registry (nothing when m or ix is nil).
func RegisterIndex(m *Metrics, ix *index.Indexer) {
	if m == nil || ix == nil {
		return
	}
	m.registry.MustRegister(&indexCollector{
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

// RegisterIndexSource registers the gauges of one index source (e.g. "postgres"):
//
//	redstate_index_source_lag_seconds{source}      age of the last applied commit when it was applied
//	redstate_index_source_lag_bytes{source}        WAL (or backlog) not yet applied
//	redstate_index_backfill_rows_total{source}     rows copied by the backfill
func RegisterIndexSource(m *Metrics, source string, lagSeconds, lagBytes, backfilled func() float64) {
	if m == nil {
		return
	}
	labels := prometheus.Labels{"source": source}
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "redstate_index_source_lag_seconds", Help: "Age of the last applied source commit when it was applied.", ConstLabels: labels}, lagSeconds),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "redstate_index_source_lag_bytes", Help: "Source changes (WAL bytes) not yet applied.", ConstLabels: labels}, lagBytes),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "redstate_index_backfill_rows_total", Help: "Rows copied by the source's backfill.", ConstLabels: labels}, backfilled),
	)
}
