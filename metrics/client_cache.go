package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/redisconn"
)

// RegisterClientCache registers the client-side cache's counters (redis.client-cache):
//
//	redstate_client_cache_reads_total{result="hit"}       reads answered from process memory
//	redstate_client_cache_reads_total{result="miss"}      cacheable reads that went to Redis
//	redstate_client_cache_reads_total{result="bypassed"}  reads of keys this process just wrote, sent to Redis
//	redstate_client_cache_invalidations_total             keys Redis reported changed
func RegisterClientCache(m *Metrics, stats func() redisconn.CacheStats) {
	if m == nil {
		return
	}
	for result, value := range map[string]func(redisconn.CacheStats) int64{
		"hit":      func(s redisconn.CacheStats) int64 { return s.Hits },
		"miss":     func(s redisconn.CacheStats) int64 { return s.Misses },
		"bypassed": func(s redisconn.CacheStats) int64 { return s.Bypassed },
	} {
		m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "redstate_client_cache_reads_total",
			Help:        "Reads routed to the client-side cache, by result: hit (process memory), miss (Redis, then cached), bypassed (a key this process just wrote, read from Redis).",
			ConstLabels: prometheus.Labels{"result": result}}, func() float64 { return float64(value(stats())) }))
	}
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "redstate_client_cache_invalidations_total",
		Help: "Keys Redis reported changed to the client-side cache (a whole-cache flush counts one)."},
		func() float64 { return float64(stats().Invalidations) }))
}
