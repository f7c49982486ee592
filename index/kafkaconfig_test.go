package index_test

import (
	"errors"
	"strings"
	"testing"
	"time"

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
	k.SessionTimeout, k.HeartbeatInterval, k.RebalanceTimeout, k.GroupLagInterval = 50*time.Millisecond, time.Second, 0, 10*time.Millisecond
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
		"index.kafka.session-timeout: must be in 100ms..596h31m23.647s, got 50ms",
		"index.kafka.rebalance-timeout: must be in 100ms..596h31m23.647s, got 0s",
		"index.kafka.heartbeat-interval: must be positive and below index.kafka.session-timeout (50ms; a third of it at most is advised), got 1s",
		"index.kafka.group-lag-interval: must be at least 100ms, got 10ms",
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

// TestKafkaConfigValidate_GroupTiming: the defaults pass; a heartbeat interval must be below
// the session timeout (equal is refused too), and the timeouts fit the protocol's int32
// milliseconds.
func TestKafkaConfigValidate_GroupTiming(t *testing.T) {
	k := index.DefaultKafkaConfig()
	if k.SessionTimeout != 10*time.Second || k.HeartbeatInterval != time.Second || k.RebalanceTimeout != 30*time.Second || k.GroupLagInterval != 5*time.Second {
		t.Errorf("defaults %+v", k)
	}
	for _, c := range []struct {
		set  func(*index.KafkaConfig)
		want string
	}{
		{func(*index.KafkaConfig) {}, ""},
		{func(k *index.KafkaConfig) { k.HeartbeatInterval = k.SessionTimeout }, "index.kafka.heartbeat-interval: must be positive and below index.kafka.session-timeout (10s"},
		{func(k *index.KafkaConfig) { k.HeartbeatInterval = -time.Second }, "index.kafka.heartbeat-interval: must be positive"},
		{func(k *index.KafkaConfig) { k.SessionTimeout = 600 * time.Hour }, "index.kafka.session-timeout: must be in 100ms..596h31m23.647s, got 600h0m0s"},
		{func(k *index.KafkaConfig) { k.RebalanceTimeout = 600 * time.Hour }, "index.kafka.rebalance-timeout: must be in 100ms..596h31m23.647s, got 600h0m0s"},
	} {
		c2 := index.DefaultConfig()
		c.set(&c2.Kafka)
		err := c2.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}
