package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestIndexKafka_LoadsRedactsAndNeedsRedis: index.kafka.* load from a file and the
// environment, the SASL password is redacted, and the source without Redis is refused.
func TestIndexKafka_LoadsRedactsAndNeedsRedis(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	yaml := seedIndexYAML + `  kafka:
    brokers: [kafka-1:9092]
    topics: [canal.db1]
    format: canal
    commit-interval: 500ms
    session-timeout: 6s
    heartbeat-interval: 500ms
    group-lag-interval: 2s
    tls: {enabled: true, ca-file: /etc/kafka/ca.pem}
    sasl: {mechanism: scram-sha-512, username: redstate}
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(path, nil, envOf(map[string]string{
		"REDSTATE_INDEX_KAFKA_BROKERS":           "kafka-1:9092,kafka-2:9092",
		"REDSTATE_INDEX_KAFKA_SASL_PASSWORD":     "s3cret",
		"REDSTATE_INDEX_KAFKA_REBALANCE_TIMEOUT": "20s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Index.Kafka
	if !reflect.DeepEqual(k.Brokers, []string{"kafka-1:9092", "kafka-2:9092"}) || k.Format != "canal" || k.CommitInterval != 500*time.Millisecond ||
		!k.TLS.Enabled || k.TLS.CAFile != "/etc/kafka/ca.pem" || k.SASL.Password != "s3cret" || k.Group != "redstate-index" {
		t.Errorf("kafka = %+v", k)
	}
	if k.SessionTimeout != 6*time.Second || k.HeartbeatInterval != 500*time.Millisecond || k.RebalanceTimeout != 20*time.Second || k.GroupLagInterval != 2*time.Second {
		t.Errorf("kafka group timing = %s %s %s %s", k.SessionTimeout, k.HeartbeatInterval, k.RebalanceTimeout, k.GroupLagInterval)
	}
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "index.kafka.brokers: need Redis") {
		t.Errorf("err = %v, want index.kafka.brokers: need Redis", err)
	}
	cfg.Redis.URL = "redis://127.0.0.1:6379/0"
	if err := cfg.Validate(); err != nil {
		t.Errorf("with Redis: %v", err)
	}
	b, err := cfg.Redacted().YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Errorf("config print leaks the SASL password:\n%s", b)
	}
}
