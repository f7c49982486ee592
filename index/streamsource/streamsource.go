// Package streamsource feeds the CDC index from Redis Streams in the shape Debezium Server's
// Redis sink writes: one stream per table, each entry holding the change event (the envelope)
// as its value — the "compact" format (one field: the record key → the event) or the
// "extended" one (fields key, value, …). Entries are read through a consumer group and
// acknowledged only after their changes were applied (or dead-lettered), so a consumer that
// dies leaves them pending; every consumer claims entries idle for longer than ClaimIdle from
// dead ones (XAUTOCLAIM). Delivery is at least once; the index's version check makes it
// effectively once. A tombstone (a record without a value, which the sink writes as its
// null.value, "default") is acknowledged and counted: the delete event before it carries the
// delete.
package streamsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/rediserr"
)

// Options configure a Source. Zero fields take the defaults stated on them.
type Options struct {
	// Client reads the streams (required).
	Client redis.UniversalClient
	// Streams are the stream keys, one per table (required).
	Streams []string
	// Group is the consumer group (default index.DefaultStreamGroup), created at the start of each
	// stream when missing, so existing entries are applied too.
	Group string
	// Consumer names this consumer in the group (default "<hostname>-<pid>").
	Consumer string
	// Format is the event format of the entries (default index.FormatDebezium).
	Format string
	// Count is how many entries one read takes (default 256).
	Count int64
	// Block is how long one read waits for entries (default 2s).
	Block time.Duration
	// ClaimIdle is how long an entry stays pending at another consumer before this one claims
	// it (default 30s).
	ClaimIdle time.Duration
	// ErrorDelay is the wait after a failure before reading again (default 1s).
	ErrorDelay time.Duration
	// NullValue is the value the sink writes for a record without one, a tombstone: the sink's
	// debezium.sink.redis.null.value (default index.DefaultStreamNullValue, the sink's default).
	NullValue string
	// Logger receives failures. Default slog.Default().
	Logger *slog.Logger
}

// Source reads the streams into an Indexer.
type Source struct {
	ix   *index.Indexer
	opts Options
	log  *slog.Logger
	// Tombstones counts the entries holding Options.NullValue (tombstones), acknowledged
	// without a change.
	Tombstones atomic.Int64
}

// New returns a Source. Errors: EINVALID (no client, no streams, unknown format).
func New(ix *index.Indexer, opts Options) (*Source, error) {
	if opts.Client == nil || len(opts.Streams) == 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "stream source: a client and at least one stream are required")
	}
	if opts.Group == "" {
		opts.Group = index.DefaultStreamGroup
	}
	if opts.Consumer == "" {
		host, _ := os.Hostname()
		opts.Consumer = host + "-" + strconv.Itoa(os.Getpid())
	}
	if opts.Format == "" {
		opts.Format = index.FormatDebezium
	}
	if err := index.CheckFormat(opts.Format); err != nil {
		return nil, err
	}
	if opts.Count <= 0 {
		opts.Count = 256
	}
	if opts.Block <= 0 {
		opts.Block = 2 * time.Second
	}
	if opts.ClaimIdle <= 0 {
		opts.ClaimIdle = index.DefaultClaimIdle
	}
	if opts.ErrorDelay <= 0 {
		opts.ErrorDelay = time.Second
	}
	if opts.NullValue == "" {
		opts.NullValue = index.DefaultStreamNullValue
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Source{ix: ix, opts: opts, log: opts.Logger.With("source", "redis-streams", "group", opts.Group, "consumer", opts.Consumer)}, nil
}

// Run consumes every stream (one reader each: on Cluster the streams live in different slots)
// until ctx ends, and returns nil then.
func (s *Source) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, stream := range s.opts.Streams {
		wg.Go(func() { s.runStream(ctx, stream) })
	}
	wg.Wait()
	return nil
}

// runStream consumes one stream: claim idle entries of dead consumers, then read new ones.
func (s *Source) runStream(ctx context.Context, stream string) {
	log := s.log.With("stream", stream)
	ready := false
	nextClaim := time.Time{}
	for ctx.Err() == nil {
		var err error
		if !ready {
			if err = s.ensureGroup(ctx, stream); err == nil {
				ready = true
			}
		}
		if err == nil && time.Now().After(nextClaim) {
			err = s.claim(ctx, stream)
			nextClaim = time.Now().Add(s.opts.ClaimIdle / 2)
		}
		if err == nil {
			err = s.readNew(ctx, stream)
		}
		if redis.HasErrorPrefix(err, "NOGROUP") {
			// The group is gone (a failover that lost its creation, a master restarted
			// without persistence, the stream deleted): create it again, at the stream's start.
			ready = false
		}
		if err != nil && ctx.Err() == nil {
			log.Error("index stream source failed; retrying", "err", err, "retry_in", s.opts.ErrorDelay.String())
			select {
			case <-ctx.Done():
			case <-time.After(s.opts.ErrorDelay):
			}
		}
	}
}

// ensureGroup creates the group at the stream's start (MKSTREAM) unless it exists.
func (s *Source) ensureGroup(ctx context.Context, stream string) error {
	err := s.opts.Client.XGroupCreateMkStream(ctx, stream, s.opts.Group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return rediserr.Map(err, "create consumer group")
	}
	return nil
}

// claim takes over entries pending longer than ClaimIdle (a dead consumer's) and applies them.
func (s *Source) claim(ctx context.Context, stream string) error {
	start := "0-0"
	for {
		msgs, next, err := s.opts.Client.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: stream, Group: s.opts.Group, Consumer: s.opts.Consumer, MinIdle: s.opts.ClaimIdle, Start: start, Count: s.opts.Count,
		}).Result()
		if err != nil {
			return rediserr.Map(err, "claim idle entries")
		}
		if len(msgs) > 0 {
			s.log.Warn("claimed entries of a dead consumer", "stream", stream, "count", len(msgs))
			if err := s.process(ctx, stream, msgs); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" || len(msgs) == 0 {
			return nil
		}
		start = next
	}
}

// readNew reads and applies entries never delivered to the group.
func (s *Source) readNew(ctx context.Context, stream string) error {
	res, err := s.opts.Client.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: s.opts.Group, Consumer: s.opts.Consumer, Streams: []string{stream, ">"}, Count: s.opts.Count, Block: s.opts.Block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return rediserr.Map(err, "read stream")
	}
	for _, st := range res {
		if err := s.process(ctx, stream, st.Messages); err != nil {
			return err
		}
	}
	return nil
}

// process applies msgs and acknowledges them. Entries that cannot be parsed are dead-lettered
// and acknowledged; a store failure acknowledges nothing (the entries stay pending and are
// read again by the claim).
func (s *Source) process(ctx context.Context, stream string, msgs []redis.XMessage) error {
	var changes []index.Change
	ids := make([]string, 0, len(msgs))
	for _, m := range msgs {
		ids = append(ids, m.ID)
		raw, ok := eventOf(m)
		if !ok {
			if err := s.ix.DeadLetterEvent(ctx, stream+"/"+m.ID, []byte(fmt.Sprint(m.Values)), "entry has no event value"); err != nil {
				return err
			}
			continue
		}
		if raw == s.opts.NullValue {
			// A tombstone, for Kafka's log compaction: the delete event before it has the
			// delete and its version; the tombstone has no version to apply it by.
			s.Tombstones.Add(1)
			continue
		}
		parsed, skipped, err := index.ParseEvent(s.opts.Format, json.RawMessage(raw), EntryPosition(m.ID))
		if err != nil {
			if derr := s.ix.DeadLetterEvent(ctx, stream+"/"+m.ID, []byte(raw), redstate.ErrorMessage(err)); derr != nil {
				return derr
			}
			continue
		}
		if skipped {
			s.ix.CountSkipped(1)
		}
		changes = append(changes, parsed...)
	}
	if _, err := s.ix.Apply(index.WithSource(ctx, "stream:"+stream), changes); err != nil {
		return err
	}
	return rediserr.Map(s.opts.Client.XAck(ctx, stream, s.opts.Group, ids...).Err(), "acknowledge entries")
}

// eventOf returns the event JSON of an entry: the "value" field (extended format) or the one
// field's value (compact format: record key → event).
func eventOf(m redis.XMessage) (string, bool) {
	if v, ok := m.Values["value"]; ok {
		s, ok := v.(string)
		return s, ok
	}
	if len(m.Values) == 1 {
		for _, v := range m.Values {
			s, ok := v.(string)
			return s, ok
		}
	}
	return "", false
}

// EntryPosition is the delivery position of a stream entry (see index.TimeVersion): its id
// "<ms>-<seq>" as ms<<22 | seq, so positions follow the stream's order as long as one
// millisecond holds fewer than 4,194,304 entries (later ones share the last position). An id
// that does not parse is position 0.
func EntryPosition(id string) uint64 {
	msText, seqText, _ := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(msText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const seqBits = 22
	return ms<<seqBits | min(seq, 1<<seqBits-1)
}
