package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/index/kafkasource"
)

// kafkaCollector exposes a Kafka source's counters and lag at scrape time:
//
//	redstate_index_kafka_events_total             records applied (tombstones and DDL included)
//	redstate_index_kafka_dead_letters_total       records that could not be parsed, dead-lettered
//	redstate_index_kafka_tombstones_total         records without a value, ignored
//	redstate_index_kafka_lag{topic,partition}     records behind the last applied one, per owned partition
type kafkaCollector struct {
	src                                  *kafkasource.Source
	events, deadLetters, tombstones, lag *prometheus.Desc
}

// RegisterIndexKafka registers src's metrics in m's registry (nothing when m or src is nil).
func RegisterIndexKafka(m *Metrics, src *kafkasource.Source) {
	if m == nil || src == nil {
		return
	}
	m.registry.MustRegister(&kafkaCollector{
		src:         src,
		events:      prometheus.NewDesc("redstate_index_kafka_events_total", "Kafka records applied to the CDC index by this instance (tombstones and DDL included).", nil, nil),
		deadLetters: prometheus.NewDesc("redstate_index_kafka_dead_letters_total", "Kafka records that could not be parsed, dead-lettered with topic, partition and offset.", nil, nil),
		tombstones:  prometheus.NewDesc("redstate_index_kafka_tombstones_total", "Kafka records without a value (tombstones), ignored.", nil, nil),
		lag: prometheus.NewDesc("redstate_index_kafka_lag",
			"Records of a partition this instance owns behind the last applied one (high watermark at the last fetch).", []string{"topic", "partition"}, nil),
	})
}

// Describe implements prometheus.Collector.
func (c *kafkaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.deadLetters
	ch <- c.tombstones
	ch <- c.lag
}

// Collect implements prometheus.Collector.
func (c *kafkaCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(c.src.Records.Load()))
	ch <- prometheus.MustNewConstMetric(c.deadLetters, prometheus.CounterValue, float64(c.src.DeadLetters.Load()))
	ch <- prometheus.MustNewConstMetric(c.tombstones, prometheus.CounterValue, float64(c.src.Tombstones.Load()))
	for tp, n := range c.src.Lag() {
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(n), tp.Topic, strconv.Itoa(int(tp.Partition)))
	}
}
