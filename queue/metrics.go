package queue

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/metrics"
)

// queueDepthTimeout bounds the Stats calls made during one scrape.
const queueDepthTimeout = 2 * time.Second

// Metrics are the queue block's metrics, registered in a metrics.Metrics registry:
//
//	redstate_queue_jobs_total{queue,outcome}        handled jobs by outcome (acked, retried, dead, malformed, lost)
//	redstate_queue_job_duration_seconds{queue}      handler run time
//	redstate_queue_depth{queue,place}               jobs per place (pending, running, retrying, scheduled, dead), read at scrape time
//
// It implements Observer. A nil *Metrics is valid and records nothing.
type Metrics struct {
	jobs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	depth    *depthCollector
}

var _ Observer = (*Metrics)(nil)

// NewMetrics registers the queue metrics in m's registry and returns them (nil when m is
// nil). Call it once per Metrics.
func NewMetrics(m *metrics.Metrics) *Metrics {
	if m == nil {
		return nil
	}
	q := &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redstate_queue_jobs_total",
			Help: "Jobs handled by queue workers, by queue and outcome (acked, retried, dead, malformed, lost).",
		}, []string{"queue", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "redstate_queue_job_duration_seconds",
			Help:    "Run time of queue job handlers, by queue.",
			Buckets: metrics.JobBuckets,
		}, []string{"queue"}),
		depth: &depthCollector{
			desc: prometheus.NewDesc("redstate_queue_depth",
				"Jobs of a queue by place (pending, running, retrying, scheduled, dead), read from the broker at scrape time.",
				[]string{"queue", "place"}, nil),
			sources: map[string]func(context.Context) (Stats, error){},
		},
	}
	m.Registry().MustRegister(q.jobs, q.duration, q.depth)
	return q
}

// ObserveJob implements Observer: it counts the outcome and, unless the message was malformed
// or the job lost (no handler run), observes its duration.
func (q *Metrics) ObserveJob(name, outcome string, d time.Duration) {
	if q == nil {
		return
	}
	q.jobs.WithLabelValues(name, outcome).Inc()
	if outcome != OutcomeMalformed && outcome != OutcomeLost {
		q.duration.WithLabelValues(name).Observe(d.Seconds())
	}
}

// WatchDepth makes redstate_queue_depth report the queue name from stats (e.g. a Broker's
// Stats bound to the name, or queue.Admin.Stats) at every scrape. A failing stats call leaves
// that queue out of the scrape.
func (q *Metrics) WatchDepth(name string, stats func(context.Context) (Stats, error)) {
	if q == nil || stats == nil {
		return
	}
	q.depth.mu.Lock()
	defer q.depth.mu.Unlock()
	q.depth.sources[name] = stats
}

// depthCollector reads queue depths at scrape time.
type depthCollector struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	sources map[string]func(context.Context) (Stats, error)
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sources := make(map[string]func(context.Context) (Stats, error), len(c.sources))
	for k, v := range c.sources {
		sources[k] = v
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), queueDepthTimeout)
	defer cancel()
	for name, stats := range sources {
		s, err := stats(ctx)
		if err != nil {
			continue
		}
		for _, p := range []struct {
			place string
			n     int64
		}{{"pending", s.Pending}, {"running", s.Running}, {"retrying", s.Retrying}, {"scheduled", s.Scheduled}, {"dead", s.Dead}} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(p.n), name, p.place)
		}
	}
}
