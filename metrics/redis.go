package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// redisProbeTimeout bounds the ping made during one scrape.
const redisProbeTimeout = 2 * time.Second

// redisCollector reads Redis reachability at scrape time:
//
//	redstate_redis_up            1 when Redis answered the process's ping, 0 when it did not
//	redstate_redis_ping_seconds  round trip of that ping
type redisCollector struct {
	probe    func(context.Context) (time.Duration, error)
	up, ping *prometheus.Desc
}

// RegisterRedisProbe registers the Redis reachability gauges, read from probe (a ping, e.g. the
// composition root's cached one shared with /readyz) at every scrape. Nothing is registered
// when m is nil; serve registers it only when Redis is configured.
func RegisterRedisProbe(m *Metrics, probe func(context.Context) (time.Duration, error)) {
	if m == nil || probe == nil {
		return
	}
	m.registry.MustRegister(&redisCollector{
		probe: probe,
		up: prometheus.NewDesc("redstate_redis_up",
			"1 when Redis answered this process's ping at scrape time, 0 when it did not (unreachable, refused, timed out).", nil, nil),
		ping: prometheus.NewDesc("redstate_redis_ping_seconds", "Round trip of that ping.", nil, nil),
	})
}

// Describe implements prometheus.Collector.
func (c *redisCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.ping
}

// Collect implements prometheus.Collector.
func (c *redisCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), redisProbeTimeout)
	defer cancel()
	took, err := c.probe(ctx)
	up := 1.0
	if err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.ping, prometheus.GaugeValue, took.Seconds())
}
