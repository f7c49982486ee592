// Package kafkasource feeds the CDC index from Kafka topics: Canal's flat messages (its MQ
// mode) and Debezium's change events (Kafka Connect, with or without the JSON converter's
// {"schema","payload"} wrapper; tombstones are ignored), read through a consumer group
// (github.com/twmb/franz-go), so several serve instances share the partitions.
//
// The changes of every record a poll returns are applied before the record's offset is marked
// for commit; marked offsets are committed every CommitInterval, when partitions are revoked
// (an instance joins or leaves) and when the source stops. A crash therefore replays what was
// applied after the last commit, and the index's version check makes the replay stale:
// delivery is at least once, the effect exactly once. A record that cannot be parsed is
// dead-lettered with its topic, partition and offset, and the partition goes on.
//
// The group's timing (session timeout, heartbeat interval, rebalance timeout) bounds how long
// a killed instance's partitions wait for another; meanwhile every instance reads the whole
// group's lag (every partition of the topics, end offset minus committed offset, and its
// owner: GroupLag), so such a backlog shows at once.
package kafkasource

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// Defaults of Options.
const (
	// DefaultMaxPollRecords bounds the records one poll takes.
	DefaultMaxPollRecords = 10000
	// DefaultFetchMaxBytes bounds one fetch response (franz-go's default, 50 MiB).
	DefaultFetchMaxBytes = 50 << 20
	// DefaultFetchMaxPartitionBytes bounds one partition's part of a fetch (1 MiB).
	DefaultFetchMaxPartitionBytes = 1 << 20
	// DefaultApplyBatch is about how many changes one Indexer.Apply call takes.
	DefaultApplyBatch = 256
	// DefaultCommitInterval is how often applied offsets are committed.
	DefaultCommitInterval = time.Second
)

// Options configure a Source. Zero fields take the defaults stated on them.
type Options struct {
	// Brokers are the seed brokers, host:port (required).
	Brokers []string
	// Topics are the topics to consume (required).
	Topics []string
	// Group is the consumer group (default index.DefaultKafkaGroup).
	Group string
	// ClientID is the client id brokers see (default index.DefaultKafkaClientID).
	ClientID string
	// Format is the records' event format: index.FormatCanal, index.FormatDebezium or
	// index.FormatAuto, each record's own (default index.FormatAuto).
	Format string
	// TLS, when set, encrypts the connections (see TLSConfig).
	TLS *tls.Config
	// SASL authenticates the connections (default none).
	SASL SASL
	// StartAtEnd makes a group without a committed offset start at the end of each partition
	// instead of its start (default false: existing records are applied too).
	StartAtEnd bool
	// MaxPollRecords bounds the records applied between two polls (default
	// DefaultMaxPollRecords).
	MaxPollRecords int
	// ApplyBatch is about how many changes of one partition go into one Indexer.Apply call (one
	// pipeline): whole records are added until it is reached (default DefaultApplyBatch).
	ApplyBatch int
	// FetchMaxBytes and FetchMaxPartitionBytes bound a fetch and one partition's part of it
	// (defaults DefaultFetchMaxBytes, DefaultFetchMaxPartitionBytes).
	FetchMaxBytes, FetchMaxPartitionBytes int32
	// CommitInterval is how often applied offsets are committed (default
	// DefaultCommitInterval).
	CommitInterval time.Duration
	// SessionTimeout, HeartbeatInterval and RebalanceTimeout are the consumer-group timing
	// (defaults index.DefaultKafkaSessionTimeout, DefaultKafkaHeartbeatInterval,
	// DefaultKafkaRebalanceTimeout): a killed instance's partitions move to the others after
	// about SessionTimeout plus one HeartbeatInterval, at most SessionTimeout plus
	// RebalanceTimeout. HeartbeatInterval must be below SessionTimeout.
	SessionTimeout, HeartbeatInterval, RebalanceTimeout time.Duration
	// GroupLagInterval is how often the whole group's lag is read for GroupLag (default
	// index.DefaultKafkaGroupLagInterval).
	GroupLagInterval time.Duration
	// ErrorDelay is the wait after a failure before polling again (default 1s).
	ErrorDelay time.Duration
	// Logger receives failures and franz-go's warnings. Default slog.Default().
	Logger *slog.Logger
	// ClientOptions are further franz-go options, applied last (tuning, tests).
	ClientOptions []kgo.Opt
}

// Source consumes the topics into an Indexer. Its counters are safe to read at any time.
type Source struct {
	ix   *index.Indexer
	opts Options
	log  *slog.Logger
	lag  lagTable
	// groupLag is the group's lag as last read (nil before the first read).
	groupLag atomic.Pointer[GroupLag]
	// failure is the last poll's failure, nil once a poll is applied cleanly.
	failure atomic.Pointer[string]

	// Records counts the records applied: their changes applied (or stale) in the index, DDL
	// and tombstones included.
	Records atomic.Int64
	// Tombstones counts the records without a value (Debezium's after a delete), ignored.
	Tombstones atomic.Int64
	// DeadLetters counts the records that could not be parsed, dead-lettered.
	DeadLetters atomic.Int64
}

// New returns a Source. Errors: EINVALID (no brokers or topics, an unknown format or SASL
// mechanism, a heartbeat interval not below the session timeout).
func New(ix *index.Indexer, opts Options) (*Source, error) {
	if ix == nil || len(opts.Brokers) == 0 || len(opts.Topics) == 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "kafka source: an indexer, brokers and at least one topic are required")
	}
	if opts.Group == "" {
		opts.Group = index.DefaultKafkaGroup
	}
	if opts.ClientID == "" {
		opts.ClientID = index.DefaultKafkaClientID
	}
	if opts.Format == "" {
		opts.Format = index.FormatAuto
	}
	switch opts.Format {
	case index.FormatAuto, index.FormatCanal, index.FormatDebezium:
	default:
		return nil, redstate.Errorf(redstate.EINVALID, "kafka source: format %q: use canal, debezium or auto", opts.Format)
	}
	if _, err := opts.SASL.mechanism(); err != nil {
		return nil, err
	}
	if opts.MaxPollRecords <= 0 {
		opts.MaxPollRecords = DefaultMaxPollRecords
	}
	if opts.ApplyBatch <= 0 {
		opts.ApplyBatch = DefaultApplyBatch
	}
	if opts.FetchMaxBytes <= 0 {
		opts.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if opts.FetchMaxPartitionBytes <= 0 {
		opts.FetchMaxPartitionBytes = DefaultFetchMaxPartitionBytes
	}
	if opts.CommitInterval <= 0 {
		opts.CommitInterval = DefaultCommitInterval
	}
	opts.SessionTimeout = positiveOr(opts.SessionTimeout, index.DefaultKafkaSessionTimeout)
	opts.HeartbeatInterval = positiveOr(opts.HeartbeatInterval, index.DefaultKafkaHeartbeatInterval)
	opts.RebalanceTimeout = positiveOr(opts.RebalanceTimeout, index.DefaultKafkaRebalanceTimeout)
	opts.GroupLagInterval = positiveOr(opts.GroupLagInterval, index.DefaultKafkaGroupLagInterval)
	if opts.HeartbeatInterval >= opts.SessionTimeout {
		return nil, redstate.Errorf(redstate.EINVALID, "kafka source: heartbeat interval %s must be below the session timeout %s", opts.HeartbeatInterval, opts.SessionTimeout)
	}
	if opts.ErrorDelay <= 0 {
		opts.ErrorDelay = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Source{ix: ix, opts: opts, lag: lagTable{m: map[TopicPartition]int64{}},
		log: opts.Logger.With("source", "kafka", "group", opts.Group)}, nil
}

// positiveOr is d, or def when d is not positive.
func positiveOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Lag returns, for each partition this instance owns and has read from, how many records
// follow the last one applied (the partition's high watermark at the last fetch minus the
// next offset to apply).
func (s *Source) Lag() map[TopicPartition]int64 { return s.lag.snapshot() }

// GroupTiming is the consumer-group timing a Source runs with (Options, defaults applied).
type GroupTiming struct {
	SessionTimeout, HeartbeatInterval, RebalanceTimeout, GroupLagInterval time.Duration
}

// GroupTiming returns the source's consumer-group timing.
func (s *Source) GroupTiming() GroupTiming {
	return GroupTiming{SessionTimeout: s.opts.SessionTimeout, HeartbeatInterval: s.opts.HeartbeatInterval,
		RebalanceTimeout: s.opts.RebalanceTimeout, GroupLagInterval: s.opts.GroupLagInterval}
}

// Failure describes the last poll's failure (a fetch error, or the store refusing its
// changes), or is "" when the last poll with records was applied cleanly.
func (s *Source) Failure() string {
	if f := s.failure.Load(); f != nil {
		return *f
	}
	return ""
}

// Run consumes until ctx ends, then commits what was applied, leaves the group and returns
// nil; meanwhile it reads the group's lag (GroupLag). Errors: EINVALID (the client options are
// refused).
func (s *Source) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(s.clientOptions()...)
	if err != nil {
		return redstate.Errorf(redstate.EINVALID, "kafka source: %v", err)
	}
	defer s.close(cl)
	lagCtx, stopLag := context.WithCancel(ctx)
	var lagDone sync.WaitGroup
	lagDone.Go(func() { s.runGroupLag(lagCtx, cl) })
	defer lagDone.Wait()
	defer stopLag()
	s.log.Info("CDC index consuming Kafka", "brokers", s.opts.Brokers, "topics", s.opts.Topics, "format", s.opts.Format)
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, s.opts.MaxPollRecords)
		if fetches.IsClientClosed() {
			return nil
		}
		var failure string
		fetches.EachError(func(topic string, partition int32, err error) {
			if ctx.Err() == nil {
				failure = fetchFailure(topic, partition, err)
				s.log.Warn("kafka fetch failed", "topic", topic, "partition", partition, "err", err)
			}
		})
		if ctx.Err() == nil {
			if err := s.apply(ctx, cl, fetches); err != nil {
				failure = "apply: " + redstate.ErrorMessage(err)
			}
		}
		cl.AllowRebalance()
		switch {
		case failure != "":
			s.failure.Store(&failure)
		case fetches.NumRecords() > 0:
			s.failure.Store(nil)
		}
		if failure != "" {
			select {
			case <-ctx.Done():
			case <-time.After(s.opts.ErrorDelay):
			}
		}
	}
	return nil
}

// fetchFailure describes a poll's error: a partition's fetch, or (no topic) the group
// membership, naming the setting to check when the broker refuses the session timeout.
func fetchFailure(topic string, partition int32, err error) string {
	if topic != "" {
		return fmt.Sprintf("fetch %s/%d: %v", topic, partition, err)
	}
	if errors.Is(err, kerr.InvalidSessionTimeout) {
		return fmt.Sprintf("consumer group: %v (index.kafka.session-timeout must be within the broker's group.min.session.timeout.ms and group.max.session.timeout.ms)", err)
	}
	return fmt.Sprintf("consumer group: %v", err)
}

// close commits the applied offsets and leaves the group (its revoke commits them again,
// harmlessly), within 10 seconds for the commit.
func (s *Source) close(cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.CommitMarkedOffsets(ctx); err != nil {
		s.log.Warn("kafka source: final commit failed; the next owner replays the uncommitted records (stale by version)", "err", err)
	}
	cl.CloseAllowingRebalance()
}
