package history

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/metrics"
)

// usageEvery is how long a measured Usage is reused by scrapes (measuring reads every bucket).
const usageEvery = time.Minute

// RegisterMetrics registers the history's metrics in m's registry (nothing when m or r is nil):
//
//	redstate_stats_history_events_total            events this process recorded (the n of every Add, one per Set and Observe)
//	redstate_stats_history_dropped_total           events lost because their flush failed
//	redstate_stats_history_overflow_total          events past the series cap (counted into "(other)", or not recorded for gauges)
//	redstate_stats_history_flushes_total{result}   flushes, ok or failed
//	redstate_stats_history_series                  series this process writes (cap: redstate_stats_history_max_series)
//	redstate_stats_history_keys                    buckets (Redis keys) the history holds, every instance's (measured at most once a minute)
//	redstate_stats_history_bytes                   their size (Redis MEMORY USAGE)
func RegisterMetrics(m *metrics.Metrics, r *Recorder, u *UsageMeter) {
	if m == nil || r == nil {
		return
	}
	m.Registry().MustRegister(&collector{r: r, u: u})
}

var (
	eventsDesc   = prometheus.NewDesc("redstate_stats_history_events_total", "Statistics history events recorded by this process (the n of every Add, one per Set and Observe).", nil, nil)
	droppedDesc  = prometheus.NewDesc("redstate_stats_history_dropped_total", "Statistics history events lost because their flush failed (store unavailable).", nil, nil)
	overflowDesc = prometheus.NewDesc("redstate_stats_history_overflow_total", "Statistics history events past the series cap: counted into the \"(other)\" series, gauges not recorded.", nil, nil)
	flushesDesc  = prometheus.NewDesc("redstate_stats_history_flushes_total", "Statistics history flushes by result (ok, failed).", []string{"result"}, nil)
	seriesDesc   = prometheus.NewDesc("redstate_stats_history_series", "Statistics history series this process writes.", nil, nil)
	maxDesc      = prometheus.NewDesc("redstate_stats_history_max_series", "The cap on the series this process writes (stats.history.max-series).", nil, nil)
	keysDesc     = prometheus.NewDesc("redstate_stats_history_keys", "Buckets (Redis keys) the statistics history holds for every instance, measured at most once a minute.", nil, nil)
	bytesDesc    = prometheus.NewDesc("redstate_stats_history_bytes", "Bytes the statistics history holds (Redis MEMORY USAGE of its keys), measured at most once a minute.", nil, nil)
)

// collector reads the recorder's counts and the store's usage at scrape time.
type collector struct {
	r *Recorder
	u *UsageMeter
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{eventsDesc, droppedDesc, overflowDesc, flushesDesc, seriesDesc, maxDesc, keysDesc, bytesDesc} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.Stats()
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(st.Events))
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(st.Dropped))
	ch <- prometheus.MustNewConstMetric(overflowDesc, prometheus.CounterValue, float64(st.Overflow))
	ch <- prometheus.MustNewConstMetric(flushesDesc, prometheus.CounterValue, float64(st.Flushes-st.FailedFlushes), "ok")
	ch <- prometheus.MustNewConstMetric(flushesDesc, prometheus.CounterValue, float64(st.FailedFlushes), "failed")
	ch <- prometheus.MustNewConstMetric(seriesDesc, prometheus.GaugeValue, float64(st.Series))
	ch <- prometheus.MustNewConstMetric(maxDesc, prometheus.GaugeValue, float64(st.MaxSeries))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if u, ok := c.u.Usage(ctx); ok {
		ch <- prometheus.MustNewConstMetric(keysDesc, prometheus.GaugeValue, float64(u.Buckets))
		ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(u.Bytes))
	}
}

// UsageMeter measures a Store's usage (Store.Usage reads every bucket) at most once per
// usageEvery, for the metrics and the overview. Safe for concurrent use.
type UsageMeter struct {
	s Store

	mu       sync.Mutex
	usage    Usage
	measured time.Time
	ok       bool
}

// NewUsageMeter returns a meter of s.
func NewUsageMeter(s Store) *UsageMeter { return &UsageMeter{s: s} }

// Usage returns the last measure, measured again (within ctx) when older than a minute; false
// when the last measure failed. A nil meter measures nothing.
func (m *UsageMeter) Usage(ctx context.Context) (Usage, bool) {
	if m == nil {
		return Usage{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.measured.IsZero() && time.Since(m.measured) < usageEvery {
		return m.usage, m.ok
	}
	u, err := m.s.Usage(ctx)
	m.usage, m.ok, m.measured = u, err == nil, time.Now()
	return u, m.ok
}
