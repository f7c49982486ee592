package indexblock

import (
	"log/slog"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
)

// KafkaSource builds the Kafka source of k (nil when index.kafka.brokers is empty).
func KafkaSource(ix *index.Indexer, k index.KafkaConfig, log *slog.Logger) (*kafkasource.Source, error) {
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
