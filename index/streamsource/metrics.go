package streamsource

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/metrics"
)

// RegisterMetrics registers the Redis Streams source's counter in m's registry (nothing
// when m or src is nil):
//
//	redstate_index_streams_tombstones_total   entries holding the sink's null value, acknowledged
func RegisterMetrics(m *metrics.Metrics, src *Source) {
	if m == nil || src == nil {
		return
	}
	m.Registry().MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "redstate_index_streams_tombstones_total",
		Help: "Redis Streams entries holding the sink's null value (tombstones after deletes), acknowledged without a change.",
	}, func() float64 { return float64(src.Tombstones.Load()) }))
}
