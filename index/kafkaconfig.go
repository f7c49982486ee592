package index

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
