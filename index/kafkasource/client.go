package kafkasource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// SASL is the authentication of the connections.
type SASL struct {
	// Mechanism is index.SASLPlain, index.SASLScramSHA256, index.SASLScramSHA512 or "" (none).
	Mechanism string
	// Username and Password are the credentials.
	Username, Password string
}

// mechanism returns franz-go's mechanism for s (nil when none). Errors: EINVALID.
func (s SASL) mechanism() (sasl.Mechanism, error) {
	switch s.Mechanism {
	case "":
		return nil, nil
	case index.SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case index.SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case index.SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, redstate.Errorf(redstate.EINVALID, "kafka source: SASL mechanism %q: use plain, scram-sha-256 or scram-sha-512", s.Mechanism)
}

// TLSConfig builds the TLS settings of the connections: caFile (PEM) replaces the system's
// roots when given; certFile and keyFile (PEM) are the client certificate, both or neither.
// Errors: EINVALID (a file that cannot be read or parsed).
func TLSConfig(caFile, certFile, keyFile string, insecureSkipVerify bool) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecureSkipVerify} //nolint:gosec // opt-in, off by default
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, redstate.Errorf(redstate.EINVALID, "kafka TLS CA: %v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, redstate.Errorf(redstate.EINVALID, "kafka TLS CA %s: no PEM certificate in it", caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, redstate.Errorf(redstate.EINVALID, "kafka TLS client certificate: %v", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// clientOptions are the franz-go options of the source's client: a group member that blocks
// rebalances while a poll's records are applied, commits only marked (applied) offsets, and
// commits them when partitions are revoked.
func (s *Source) clientOptions() []kgo.Opt {
	start := kgo.NewOffset().AtStart()
	if s.opts.StartAtEnd {
		start = kgo.NewOffset().AtEnd()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.opts.Brokers...),
		kgo.ClientID(s.opts.ClientID),
		kgo.ConsumerGroup(s.opts.Group),
		kgo.ConsumeTopics(s.opts.Topics...),
		kgo.ConsumeResetOffset(start),
		kgo.FetchMaxBytes(s.opts.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(s.opts.FetchMaxPartitionBytes),
		kgo.SessionTimeout(s.opts.SessionTimeout),
		kgo.HeartbeatInterval(s.opts.HeartbeatInterval),
		kgo.RebalanceTimeout(s.opts.RebalanceTimeout),
		kgo.BlockRebalanceOnPoll(),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(s.opts.CommitInterval),
		kgo.OnPartitionsRevoked(s.revoked),
		kgo.OnPartitionsLost(s.lost),
		kgo.WithLogger(kgoLogger{s.opts.Logger.With("source", "kafka")}),
	}
	return append(append(opts, s.connectionOptions()...), s.opts.ClientOptions...)
}

// adminOptions are the options of the client that reads the group's lag: the same brokers,
// client id, TLS and SASL, no group.
func (s *Source) adminOptions() []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(s.opts.Brokers...),
		kgo.ClientID(s.opts.ClientID),
		kgo.WithLogger(kgoLogger{s.opts.Logger.With("source", "kafka", "client", "group-lag")}),
	}, s.connectionOptions()...)
}

// connectionOptions are the TLS and SASL options.
func (s *Source) connectionOptions() []kgo.Opt {
	var opts []kgo.Opt
	if s.opts.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.opts.TLS))
	}
	if m, _ := s.opts.SASL.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

// revoked commits what was applied of the partitions leaving this instance, so their next
// owner starts after it (the rebalance waits for the poll being applied: BlockRebalanceOnPoll).
func (s *Source) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.CommitMarkedOffsets(cctx); err != nil {
		s.log.Warn("kafka source: commit on revoke failed; the next owner replays the uncommitted records (stale by version)", "err", err)
	}
	s.lag.drop(revoked)
}

// lost forgets partitions taken away without a chance to commit (this member was fenced):
// their next owner replays from the last commit.
func (s *Source) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	if len(lost) > 0 {
		s.log.Warn("kafka source: partitions lost; their next owner replays from the last commit", "partitions", lost)
	}
	s.lag.drop(lost)
}

// kgoLogger passes franz-go's warnings and errors to slog.
type kgoLogger struct{ log *slog.Logger }

// Level implements kgo.Logger.
func (kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

// Log implements kgo.Logger.
func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelWarn
	if level == kgo.LogLevelError {
		lvl = slog.LevelError
	}
	l.log.Log(context.Background(), lvl, "kafka client: "+msg, keyvals...)
}
