package index

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/metrics"
)

// RegisterSourceLeader registers the gauge of an index source read by one instance at a
// time (the MySQL binlog, behind a lease):
//
//	redstate_index_source_leader{source}  1 while this instance reads the source, 0 in standby
func RegisterSourceLeader(m *metrics.Metrics, source string, leader func() float64) {
	if m == nil {
		return
	}
	m.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "redstate_index_source_leader",
		Help: "1 while this instance reads the source (holds its lease), 0 in standby.", ConstLabels: prometheus.Labels{"source": source}}, leader))
}
