package index_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
)

// TestKafkaConfigValidate_ReportsEveryProblem: one call names every bad index.kafka key.
func TestKafkaConfigValidate_ReportsEveryProblem(t *testing.T) {
	c := index.DefaultConfig()
	k := &c.Kafka
	k.Brokers = []string{"kafka:9092", "no-port"}
	k.Topics = []string{"ok.topic", "bad topic"}
	k.Group, k.ClientID, k.Format, k.Start = "", "", "avro", "middle"
	k.MaxPollRecords, k.FetchMaxBytes, k.FetchMaxPartitionBytes, k.CommitInterval = 0, 0, -1, 0
	k.TLS = index.KafkaTLS{CertFile: "c.pem"}
	k.SASL = index.KafkaSASL{Mechanism: "gssapi"}
	err := c.Validate()
	want := []string{
		"index.kafka.brokers: are set but no index.tables are declared",
		`index.kafka.brokers[1]: must be host:port, got "no-port"`,
		`index.kafka.topics[1]: must be 1..249 characters from [A-Za-z0-9._-], got "bad topic"`,
		"index.kafka.group: must not be empty",
		"index.kafka.client-id: must not be empty",
		`index.kafka.format: must be canal, debezium or auto, got "avro"`,
		`index.kafka.start: must be earliest or latest, got "middle"`,
		"index.kafka.max-poll-records: must be at least 1, got 0",
		"index.kafka.fetch-max-bytes: must be in 1..2147483647, got 0",
		"index.kafka.fetch-max-partition-bytes: must be in 1..2147483647, got -1",
		"index.kafka.commit-interval: must be positive, got 0s",
		"index.kafka.tls.cert-file: and index.kafka.tls.key-file must be given together",
		"index.kafka.tls.enabled: is false but other index.kafka.tls settings are given; set it to true",
		`index.kafka.sasl.mechanism: must be plain, scram-sha-256 or scram-sha-512, got "gssapi"`,
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Fatalf("err = %v, want %d problems", err, len(want))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err lacks %q:\n%v", w, err)
		}
	}
	c = index.DefaultConfig()
	c.Kafka.Brokers = []string{"kafka:9092"}
	c.Kafka.SASL = index.KafkaSASL{Password: "x"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "index.kafka.topics: must name at least one topic") ||
		!strings.Contains(err.Error(), "index.kafka.sasl.mechanism: must be set") {
		t.Errorf("err = %v", err)
	}
}
