package kafkasource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupLagReadTimeout bounds one read of the group's lag (its four admin requests).
const groupLagReadTimeout = 15 * time.Second

// GroupLag is the whole consumer group's progress over every partition of the source's topics,
// whoever owns them: a partition of a killed instance keeps its owner (until the coordinator
// expires it) and its lag grows, so the backlog shows at once, on every instance.
type GroupLag struct {
	// Group is the consumer group.
	Group string
	// State is the group's state at the coordinator: Stable, PreparingRebalance,
	// CompletingRebalance, Empty or Dead (no member and no commit).
	State string
	// Members is how many members the coordinator counts, a killed one included until its
	// session times out.
	Members int
	// Records is the sum of the partitions' known lag.
	Records int64
	// Partitions are every partition of the topics, by topic then partition.
	Partitions []PartitionLag
	// ReadAt is when the above was read; zero before the first read succeeded.
	ReadAt time.Time
	// Err is why the last read failed ("" when it succeeded), at ErrAt; the fields above stay
	// those of the last read that succeeded.
	Err   string
	ErrAt time.Time
}

// PartitionLag is one partition's progress in the group.
type PartitionLag struct {
	Topic     string
	Partition int32
	// End is the partition's end offset (high watermark): the offset the next record gets.
	End int64
	// Committed is the group's committed offset, the next record to apply; -1 when none.
	Committed int64
	// Lag is End - Committed: the records no instance has applied and committed. Without a
	// commit: the records the group will read (from the log start, or none with start latest).
	// -1 when unknown (Err).
	Lag int64
	// Member, ClientID and Host name the owner; empty when no member has the partition (a
	// rebalance is under way, or no instance runs). Self is whether this instance owns it.
	Member, ClientID, Host string
	Self                   bool
	// Err is why the offsets of this partition are unknown ("" when known).
	Err string
}

// GroupLag returns the group's lag as last read (every GroupLagInterval while Run runs).
func (s *Source) GroupLag() GroupLag {
	if g := s.groupLag.Load(); g != nil {
		return *g
	}
	return GroupLag{Group: s.opts.Group}
}

// runGroupLag reads the group's lag every GroupLagInterval until ctx ends, on a client of its
// own (no admin request waits behind, or holds up, the consumer's heartbeats and commits);
// consumer tells which partitions are this instance's. A failed read is kept in GroupLag and
// logged when the reads start failing and when they succeed again, never fatal.
func (s *Source) runGroupLag(ctx context.Context, consumer *kgo.Client) {
	cl, err := kgo.NewClient(s.adminOptions()...)
	if err != nil {
		s.groupLagFailed(fmt.Errorf("admin client: %w", err))
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(s.opts.GroupLagInterval)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, groupLagReadTimeout)
		g, err := s.readGroupLag(rctx, adm, consumer)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.groupLagFailed(err)
		default:
			if prev := s.groupLag.Load(); prev != nil && prev.Err != "" {
				s.log.Info("kafka group lag readable again")
			}
			s.groupLag.Store(&g)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// groupLagFailed keeps the last read with err, logging the first failure of a run of them.
func (s *Source) groupLagFailed(err error) {
	g := s.GroupLag()
	if g.Err == "" {
		s.log.Warn("kafka group lag unreadable; the status keeps the last read, with its age", "err", err)
	}
	g.Err, g.ErrAt = err.Error(), time.Now()
	s.groupLag.Store(&g)
}

// readGroupLag reads the group's members and assignments, its committed offsets and the
// topics' end offsets (and start offsets when a partition has no commit and the group starts
// at the earliest record). Errors: a request that failed as a whole.
func (s *Source) readGroupLag(ctx context.Context, adm *kadm.Client, consumer *kgo.Client) (GroupLag, error) {
	described, err := adm.DescribeGroups(ctx, s.opts.Group)
	if err != nil {
		return GroupLag{}, fmt.Errorf("describe group: %w", err)
	}
	desc := described[s.opts.Group]
	switch {
	case errors.Is(desc.Err, kerr.GroupIDNotFound): // no member has joined yet, nothing committed
		desc = kadm.DescribedGroup{State: "Dead"}
	case desc.Err != nil:
		return GroupLag{}, fmt.Errorf("describe group: %w", desc.Err)
	}
	commits, err := adm.FetchOffsets(ctx, s.opts.Group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		commits, err = kadm.OffsetResponses{}, nil
	}
	if err != nil {
		return GroupLag{}, fmt.Errorf("fetch committed offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, s.opts.Topics...)
	if err != nil {
		return GroupLag{}, fmt.Errorf("list end offsets: %w", err)
	}
	var starts kadm.ListedOffsets
	if !s.opts.StartAtEnd && s.uncommitted(ends, commits) {
		if starts, err = adm.ListStartOffsets(ctx, s.opts.Topics...); err != nil {
			return GroupLag{}, fmt.Errorf("list start offsets: %w", err)
		}
	}
	self, _ := consumer.GroupMetadata()
	owners := map[TopicPartition]*kadm.DescribedGroupMember{}
	for i, m := range desc.Members {
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					owners[TopicPartition{Topic: t.Topic, Partition: p}] = &desc.Members[i]
				}
			}
		}
	}
	g := GroupLag{Group: s.opts.Group, State: desc.State, Members: len(desc.Members), ReadAt: time.Now()}
	ends.Each(func(end kadm.ListedOffset) {
		pl := s.partitionLag(end, commits, starts)
		if m := owners[TopicPartition{Topic: end.Topic, Partition: end.Partition}]; m != nil {
			pl.Member, pl.ClientID, pl.Host, pl.Self = m.MemberID, m.ClientID, m.ClientHost, m.MemberID == self
		}
		if pl.Lag > 0 {
			g.Records += pl.Lag
		}
		g.Partitions = append(g.Partitions, pl)
	})
	slices.SortFunc(g.Partitions, func(a, b PartitionLag) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return g, nil
}

// uncommitted says whether some partition of ends has no commit in commits.
func (s *Source) uncommitted(ends kadm.ListedOffsets, commits kadm.OffsetResponses) bool {
	none := false
	ends.Each(func(end kadm.ListedOffset) {
		if c, ok := commits.Lookup(end.Topic, end.Partition); !ok || c.Err != nil || c.At < 0 {
			none = true
		}
	})
	return none
}

// partitionLag is one partition's offsets and lag (its owner is filled in by the caller). A
// topic that does not exist is listed as partition -1 with its error.
func (s *Source) partitionLag(end kadm.ListedOffset, commits kadm.OffsetResponses, starts kadm.ListedOffsets) PartitionLag {
	pl := PartitionLag{Topic: end.Topic, Partition: end.Partition, End: end.Offset, Committed: -1, Lag: -1}
	c, committed := commits.Lookup(end.Topic, end.Partition)
	var failed error
	switch {
	case end.Err != nil:
		failed = fmt.Errorf("end offset: %w", end.Err)
	case committed && c.Err != nil:
		failed = fmt.Errorf("committed offset: %w", c.Err)
	case committed && c.At >= 0:
		pl.Committed, pl.Lag = c.At, max(end.Offset-c.At, 0)
	case s.opts.StartAtEnd:
		pl.Lag = 0 // the group begins at the end: nothing waits
	default:
		start, ok := starts.Lookup(end.Topic, end.Partition)
		switch {
		case !ok:
			failed = errors.New("start offset: not listed")
		case start.Err != nil:
			failed = fmt.Errorf("start offset: %w", start.Err)
		default:
			pl.Lag = max(end.Offset-start.Offset, 0)
		}
	}
	if failed != nil {
		pl.Lag, pl.Err = -1, failed.Error()
	}
	return pl
}
