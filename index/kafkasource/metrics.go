package kafkasource

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/metrics"
)

// kafkaCollector exposes a Kafka source's counters and lag at scrape time:
//
//	redstate_index_kafka_events_total             records applied (tombstones and DDL included)
//	redstate_index_kafka_dead_letters_total       records that could not be parsed, dead-lettered
//	redstate_index_kafka_tombstones_total         records without a value, ignored
//	redstate_index_kafka_lag{topic,partition}     records behind the last applied one, per owned partition
//	redstate_index_kafka_group_lag_records{topic,partition}
//	                                              the whole group's: end offset minus committed, every partition
//	redstate_index_kafka_group_lag_age_seconds    age of that read (it grows while reads fail)
type kafkaCollector struct {
	src                                  *Source
	events, deadLetters, tombstones, lag *prometheus.Desc
	groupLag, groupLagAge                *prometheus.Desc
}

// RegisterMetrics registers src's metrics in m's registry (nothing when m or src is nil).
func RegisterMetrics(m *metrics.Metrics, src *Source) {
	if m == nil || src == nil {
		return
	}
	m.Registry().MustRegister(&kafkaCollector{
		src:         src,
		events:      prometheus.NewDesc("redstate_index_kafka_events_total", "Kafka records applied to the CDC index by this instance (tombstones and DDL included).", nil, nil),
		deadLetters: prometheus.NewDesc("redstate_index_kafka_dead_letters_total", "Kafka records that could not be parsed, dead-lettered with topic, partition and offset.", nil, nil),
		tombstones:  prometheus.NewDesc("redstate_index_kafka_tombstones_total", "Kafka records without a value (tombstones), ignored.", nil, nil),
		lag: prometheus.NewDesc("redstate_index_kafka_lag",
			"Records of a partition this instance owns behind the last applied one (high watermark at the last fetch).", []string{"topic", "partition"}, nil),
		groupLag: prometheus.NewDesc("redstate_index_kafka_group_lag_records",
			"Records of a partition no instance of the consumer group has applied and committed (end offset minus the group's committed offset), whoever owns it; every instance reports the whole group: aggregate with max, not sum.",
			[]string{"topic", "partition"}, nil),
		groupLagAge: prometheus.NewDesc("redstate_index_kafka_group_lag_age_seconds",
			"Seconds since the group's lag was last read successfully (it is read every index.kafka.group-lag-interval; it grows while the reads fail).", nil, nil),
	})
}

// Describe implements prometheus.Collector.
func (c *kafkaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.deadLetters
	ch <- c.tombstones
	ch <- c.lag
	ch <- c.groupLag
	ch <- c.groupLagAge
}

// Collect implements prometheus.Collector.
func (c *kafkaCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(c.src.Records.Load()))
	ch <- prometheus.MustNewConstMetric(c.deadLetters, prometheus.CounterValue, float64(c.src.DeadLetters.Load()))
	ch <- prometheus.MustNewConstMetric(c.tombstones, prometheus.CounterValue, float64(c.src.Tombstones.Load()))
	for tp, n := range c.src.Lag() {
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(n), tp.Topic, strconv.Itoa(int(tp.Partition)))
	}
	g := c.src.GroupLag()
	if g.ReadAt.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.groupLagAge, prometheus.GaugeValue, time.Since(g.ReadAt).Seconds())
	for _, p := range g.Partitions {
		if p.Lag >= 0 { // known
			ch <- prometheus.MustNewConstMetric(c.groupLag, prometheus.GaugeValue, float64(p.Lag), p.Topic, strconv.Itoa(int(p.Partition)))
		}
	}
}
