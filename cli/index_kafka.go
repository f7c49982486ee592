package cli

import (
	"log/slog"
	"time"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
)

// kafkaSource builds the Kafka source of k (nil when index.kafka.brokers is empty).
func kafkaSource(ix *index.Indexer, k index.KafkaConfig, log *slog.Logger) (*kafkasource.Source, error) {
	if len(k.Brokers) == 0 {
		return nil, nil
	}
	opts := kafkasource.Options{Brokers: k.Brokers, Topics: k.Topics, Group: k.Group, ClientID: k.ClientID, Format: k.Format,
		StartAtEnd: k.Start == index.KafkaStartLatest, MaxPollRecords: k.MaxPollRecords,
		FetchMaxBytes: int32(k.FetchMaxBytes), FetchMaxPartitionBytes: int32(k.FetchMaxPartitionBytes), // validated ≤ MaxInt32
		CommitInterval: k.CommitInterval, SessionTimeout: k.SessionTimeout, HeartbeatInterval: k.HeartbeatInterval,
		RebalanceTimeout: k.RebalanceTimeout, GroupLagInterval: k.GroupLagInterval,
		SASL: kafkasource.SASL{Mechanism: k.SASL.Mechanism, Username: k.SASL.Username, Password: k.SASL.Password}, Logger: log}
	if t := k.TLS; t.Enabled {
		c, err := kafkasource.TLSConfig(t.CAFile, t.CertFile, t.KeyFile, t.InsecureSkipVerify)
		if err != nil {
			return nil, err
		}
		opts.TLS = c
	}
	return kafkasource.New(ix, opts)
}

// kafkaGroupStatus adds the Kafka source's group to st for GET /v1/index/status: the whole
// group's lag as last read (now is the answer's time, for the read's age).
func kafkaGroupStatus(st *httpapi.IndexSourceStatus, d *kafkasource.Detail, now time.Time) {
	g, timing := d.Group, d.Timing
	kg := &httpapi.IndexKafkaGroup{Group: g.Group, State: g.State, Members: g.Members,
		SessionTimeoutSeconds: timing.SessionTimeout.Seconds(), HeartbeatIntervalSeconds: timing.HeartbeatInterval.Seconds(),
		RebalanceTimeoutSeconds: timing.RebalanceTimeout.Seconds(), LagIntervalSeconds: timing.GroupLagInterval.Seconds(),
		Error: g.Err, Partitions: []httpapi.IndexKafkaPartition{}}
	if !g.ReadAt.IsZero() {
		records, at, age := g.Records, g.ReadAt, now.Sub(g.ReadAt).Seconds()
		st.GroupLagRecords, kg.ReadAt, kg.AgeSeconds = &records, &at, &age
	}
	if g.Err != "" {
		at := g.ErrAt
		kg.ErrorAt = &at
	}
	for _, p := range g.Partitions {
		kg.Partitions = append(kg.Partitions, httpapi.IndexKafkaPartition{Topic: p.Topic, Partition: p.Partition, EndOffset: p.End,
			CommittedOffset: p.Committed, LagRecords: p.Lag, Member: p.Member, ClientID: p.ClientID, Host: p.Host, Self: p.Self, Error: p.Err})
	}
	st.KafkaGroup = kg
}
