package index

import (
	"fmt"
	"math"
	"net"
	"strings"
	"time"
)

// Defaults and names of the Kafka source's settings (index/kafkasource, KafkaConfig).
const (
	// DefaultKafkaGroup is the consumer group of the Kafka source.
	DefaultKafkaGroup = "redstate-index"
	// DefaultKafkaClientID is the client id the Kafka source gives brokers.
	DefaultKafkaClientID = "redstate"
	// FormatAuto reads each Kafka record in the format it looks like (Canal or Debezium).
	FormatAuto = "auto"
	// SASL mechanisms of KafkaSASL.Mechanism.
	SASLPlain       = "plain"
	SASLScramSHA256 = "scram-sha-256"
	SASLScramSHA512 = "scram-sha-512"
)

// Defaults of the Kafka source's consumer-group timing (KafkaConfig; see docs/index.md, "Takeover
// time").
const (
	// DefaultKafkaSessionTimeout is how long the group coordinator waits for a member's heartbeat
	// before it takes the member's partitions away: Kafka's consumer default before 3.0. Kafka 3.0
	// (KIP-735) raised its own to 45 s against false expiries on flaky networks; here a false
	// expiry costs a replay from the last commit (stale by version), while 45 s is how long a
	// killed instance's partitions would wait.
	DefaultKafkaSessionTimeout = 10 * time.Second
	// DefaultKafkaHeartbeatInterval is how often a member heartbeats: a tenth of the session
	// timeout, so one or two lost heartbeats do not expire it, and the survivors learn of a
	// rebalance within a second.
	DefaultKafkaHeartbeatInterval = time.Second
	// DefaultKafkaRebalanceTimeout is how long the coordinator waits for every live member to
	// rejoin a rebalance: enough for a member to finish applying its poll and commit on revoke
	// (that commit is bounded at 10 s).
	DefaultKafkaRebalanceTimeout = 30 * time.Second
	// DefaultKafkaGroupLagInterval is how often the whole group's lag is read (a few small admin
	// requests).
	DefaultKafkaGroupLagInterval = 5 * time.Second
	// kafkaMinGroupTimeout is franz-go's floor of the session and rebalance timeouts.
	kafkaMinGroupTimeout = 100 * time.Millisecond
	// kafkaMaxGroupTimeout is the largest timeout the protocol carries (int32 milliseconds).
	kafkaMaxGroupTimeout = time.Duration(math.MaxInt32) * time.Millisecond
)

// Start positions of KafkaConfig.Start.
const (
	KafkaStartEarliest = "earliest"
	KafkaStartLatest   = "latest"
)

// KafkaConfig configures the Kafka source of the index (package index/kafkasource). It needs
// Redis: the offsets it commits promise that the index kept what was applied.
type KafkaConfig struct {
	// Brokers are the seed brokers, host:port (none: the source is off).
	Brokers []string `koanf:"brokers"`
	// Topics are the topics to consume (Canal's MQ topics, Debezium's one per table).
	Topics []string `koanf:"topics"`
	// Group is the consumer group every instance joins (default DefaultKafkaGroup).
	Group string `koanf:"group"`
	// ClientID is the client id brokers see (default DefaultKafkaClientID).
	ClientID string `koanf:"client-id"`
	// Format is the records' format: canal, debezium or auto (default: each record's own).
	Format string `koanf:"format"`
	// Start is where a group without a committed offset begins: earliest (default, existing
	// records are applied) or latest.
	Start string `koanf:"start"`
	// MaxPollRecords bounds the records applied between two polls (default 10000).
	MaxPollRecords int `koanf:"max-poll-records"`
	// FetchMaxBytes bounds one fetch response (default 50 MiB).
	FetchMaxBytes int `koanf:"fetch-max-bytes"`
	// FetchMaxPartitionBytes bounds one partition's part of a fetch (default 1 MiB).
	FetchMaxPartitionBytes int `koanf:"fetch-max-partition-bytes"`
	// CommitInterval is how often applied offsets are committed (default 1s); they are also
	// committed when partitions move to another instance and when serve stops.
	CommitInterval time.Duration `koanf:"commit-interval"`
	// SessionTimeout is how long the group coordinator waits for an instance's heartbeat before
	// its partitions go to the others (a killed instance's partitions move after about this,
	// plus one heartbeat and the rebalance; default DefaultKafkaSessionTimeout). The broker
	// refuses a value outside its group.min.session.timeout.ms..group.max.session.timeout.ms
	// (6s..30m by default).
	SessionTimeout time.Duration `koanf:"session-timeout"`
	// HeartbeatInterval is how often an instance heartbeats; below SessionTimeout, at most a
	// third of it advised (default DefaultKafkaHeartbeatInterval).
	HeartbeatInterval time.Duration `koanf:"heartbeat-interval"`
	// RebalanceTimeout is how long a rebalance waits for every live instance to rejoin
	// (default DefaultKafkaRebalanceTimeout).
	RebalanceTimeout time.Duration `koanf:"rebalance-timeout"`
	// GroupLagInterval is how often the whole group's lag (every partition of the topics, end
	// offset minus committed offset) is read for the status and metrics (default
	// DefaultKafkaGroupLagInterval).
	GroupLagInterval time.Duration `koanf:"group-lag-interval"`
	// TLS encrypts the connections.
	TLS KafkaTLS `koanf:"tls"`
	// SASL authenticates the connections.
	SASL KafkaSASL `koanf:"sasl"`
}

// KafkaTLS is the TLS of the Kafka source's connections.
type KafkaTLS struct {
	// Enabled turns TLS on (default false).
	Enabled bool `koanf:"enabled"`
	// CAFile is a PEM file of the CAs to trust instead of the system's (default none).
	CAFile string `koanf:"ca-file"`
	// CertFile and KeyFile are the client certificate and key, PEM (both or neither).
	CertFile string `koanf:"cert-file"`
	KeyFile  string `koanf:"key-file"`
	// InsecureSkipVerify accepts any server certificate (default false; tests only).
	InsecureSkipVerify bool `koanf:"insecure-skip-verify"`
}

// KafkaSASL is the SASL authentication of the Kafka source's connections.
type KafkaSASL struct {
	// Mechanism is plain, scram-sha-256, scram-sha-512 or "" (default: none).
	Mechanism string `koanf:"mechanism"`
	// Username and Password are the credentials (the password is redacted by config print).
	Username string `koanf:"username"`
	Password string `koanf:"password"`
}

// DefaultKafkaConfig is the Kafka source's defaults (off: no brokers).
func DefaultKafkaConfig() KafkaConfig {
	return KafkaConfig{Brokers: []string{}, Topics: []string{}, Group: DefaultKafkaGroup, ClientID: DefaultKafkaClientID,
		Format: FormatAuto, Start: KafkaStartEarliest, MaxPollRecords: 10000, FetchMaxBytes: 50 << 20,
		FetchMaxPartitionBytes: 1 << 20, CommitInterval: time.Second, SessionTimeout: DefaultKafkaSessionTimeout,
		HeartbeatInterval: DefaultKafkaHeartbeatInterval, RebalanceTimeout: DefaultKafkaRebalanceTimeout, GroupLagInterval: DefaultKafkaGroupLagInterval}
}

// validate reports every problem of k through add, each naming its key (index.kafka.*);
// tables says whether index.tables declares any.
func (k KafkaConfig) validate(tables bool, add func(key, format string, args ...any)) {
	const p = "index.kafka."
	if len(k.Brokers) > 0 {
		if len(k.Topics) == 0 {
			add(p+"topics", "must name at least one topic")
		}
		if !tables {
			add(p+"brokers", "are set but no index.tables are declared")
		}
	}
	for i, b := range k.Brokers {
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			add(fmt.Sprintf(p+"brokers[%d]", i), "must be host:port, got %q", b)
		}
	}
	for i, t := range k.Topics {
		if t == "" || len(t) > 249 || strings.Trim(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			add(fmt.Sprintf(p+"topics[%d]", i), "must be 1..249 characters from [A-Za-z0-9._-], got %q", t)
		}
	}
	if k.Group == "" {
		add(p+"group", "must not be empty")
	}
	if k.ClientID == "" {
		add(p+"client-id", "must not be empty")
	}
	switch k.Format {
	case FormatAuto, FormatCanal, FormatDebezium:
	default:
		add(p+"format", "must be canal, debezium or auto, got %q", k.Format)
	}
	switch k.Start {
	case KafkaStartEarliest, KafkaStartLatest:
	default:
		add(p+"start", "must be earliest or latest, got %q", k.Start)
	}
	if k.MaxPollRecords < 1 {
		add(p+"max-poll-records", "must be at least 1, got %d", k.MaxPollRecords)
	}
	if k.FetchMaxBytes < 1 || k.FetchMaxBytes > math.MaxInt32 {
		add(p+"fetch-max-bytes", "must be in 1..%d, got %d", math.MaxInt32, k.FetchMaxBytes)
	}
	if k.FetchMaxPartitionBytes < 1 || k.FetchMaxPartitionBytes > math.MaxInt32 {
		add(p+"fetch-max-partition-bytes", "must be in 1..%d, got %d", math.MaxInt32, k.FetchMaxPartitionBytes)
	}
	if k.CommitInterval <= 0 {
		add(p+"commit-interval", "must be positive, got %s", k.CommitInterval)
	}
	k.validateGroupTiming(add)
	t := k.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		add(p+"tls.cert-file", "and index.kafka.tls.key-file must be given together")
	}
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify) {
		add(p+"tls.enabled", "is false but other index.kafka.tls settings are given; set it to true")
	}
	s := k.SASL
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.Password != "" {
			add(p+"sasl.mechanism", "must be set (plain, scram-sha-256 or scram-sha-512) when a username or password is given")
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if s.Username == "" {
			add(p+"sasl.username", "must be set with index.kafka.sasl.mechanism %s", s.Mechanism)
		}
	default:
		add(p+"sasl.mechanism", "must be plain, scram-sha-256 or scram-sha-512, got %q", s.Mechanism)
	}
}

// validateGroupTiming reports the consumer-group timing's problems through add: the bounds
// franz-go and the protocol set, and a heartbeat within the session. The broker's own bounds
// (group.min/max.session.timeout.ms) are the broker's to check: the source reports its refusal.
func (k KafkaConfig) validateGroupTiming(add func(key, format string, args ...any)) {
	const p = "index.kafka."
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"session-timeout", k.SessionTimeout}, {"rebalance-timeout", k.RebalanceTimeout}} {
		if d.v < kafkaMinGroupTimeout || d.v > kafkaMaxGroupTimeout {
			add(p+d.key, "must be in %s..%s, got %s", kafkaMinGroupTimeout, kafkaMaxGroupTimeout, d.v)
		}
	}
	if k.HeartbeatInterval <= 0 || k.HeartbeatInterval >= k.SessionTimeout {
		add(p+"heartbeat-interval", "must be positive and below index.kafka.session-timeout (%s; a third of it at most is advised), got %s",
			k.SessionTimeout, k.HeartbeatInterval)
	}
	if k.GroupLagInterval < kafkaMinGroupTimeout {
		add(p+"group-lag-interval", "must be at least %s, got %s", kafkaMinGroupTimeout, k.GroupLagInterval)
	}
}
