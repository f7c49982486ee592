package kafkasource

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// apply applies the records of one poll, each partition's in order and the partitions in
// parallel, and marks the applied ones for commit. A partition whose apply failed (the store)
// is rewound to its first record of the poll, to be read again; apply returns the first such
// failure. It runs between a poll and AllowRebalance, so the partitions cannot move meanwhile.
func (s *Source) apply(ctx context.Context, cl *kgo.Client, fetches kgo.Fetches) error {
	var parts []kgo.FetchTopicPartition
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) > 0 {
			parts = append(parts, p)
		}
	})
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { errs[i] = s.applyPartition(ctx, p.Records) })
	}
	wg.Wait()
	rewind := map[string]map[int32]kgo.EpochOffset{}
	var failure error
	for i, p := range parts {
		first, last := p.Records[0], p.Records[len(p.Records)-1]
		if errs[i] != nil {
			if ctx.Err() == nil {
				s.log.Error("kafka source: applying records failed; reading them again", "topic", p.Topic, "partition", p.Partition,
					"offset", first.Offset, "err", errs[i])
			}
			if rewind[p.Topic] == nil {
				rewind[p.Topic] = map[int32]kgo.EpochOffset{}
			}
			rewind[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: first.LeaderEpoch, Offset: first.Offset}
			if failure == nil {
				failure = errs[i]
			}
			continue
		}
		cl.MarkCommitRecords(last)
		s.lag.set(TopicPartition{Topic: p.Topic, Partition: p.Partition}, p.HighWatermark-last.Offset-1)
	}
	if len(rewind) > 0 {
		cl.SetOffsets(rewind)
	}
	return failure
}

// poison is a record that could not be parsed.
type poison struct {
	where, reason string
	raw           []byte
}

// batch is a run of consecutive records of one partition, parsed: their changes (at least
// ApplyBatch unless it is the partition's last), the records that could not be parsed and the
// counts of the others.
type batch struct {
	changes             []index.Change
	bad                 []poison
	records             int
	tombstones, skipped int
}

// applyPartition applies records of one partition in offset order, ApplyBatch changes or so
// at a time: while one batch's Indexer.Apply is in flight the next batch is parsed, and a
// batch is applied only once the one before it is. After a batch's changes come the dead
// letters of its records that could not be parsed. Errors: EUNAVAILABLE (the store: nothing is
// to be taken as applied).
func (s *Source) applyPartition(ctx context.Context, records []*kgo.Record) error {
	batches := make(chan batch, 1)
	quit := make(chan struct{})
	go func() {
		defer close(batches)
		s.parseBatches(records, batches, quit)
	}()
	var failure error
	for b := range batches {
		if failure != nil {
			continue
		}
		if failure = s.applyBatch(ctx, b); failure != nil {
			close(quit)
		}
	}
	return failure
}

// parseBatches parses records into batches and sends them on out, in order, until they are
// all sent or quit is closed.
func (s *Source) parseBatches(records []*kgo.Record, out chan<- batch, quit <-chan struct{}) {
	var b batch
	send := func() bool {
		select {
		case out <- b:
			b = batch{}
			return true
		case <-quit:
			return false
		}
	}
	for _, r := range records {
		b.records++
		if len(r.Value) == 0 {
			b.tombstones++
			continue
		}
		where := Where(r.Topic, r.Partition, r.Offset)
		parsed, skip, err := s.parse(r)
		if err != nil {
			b.bad = append(b.bad, poison{where: where, reason: redstate.ErrorMessage(err), raw: r.Value})
			continue
		}
		if skip {
			b.skipped++
		}
		for i := range parsed {
			parsed[i].Source = where
		}
		b.changes = append(b.changes, parsed...)
		if len(b.changes) >= s.opts.ApplyBatch && !send() {
			return
		}
	}
	if b.records > 0 {
		send()
	}
}

// applyBatch applies one batch: its changes in one Indexer.Apply, then its dead letters.
func (s *Source) applyBatch(ctx context.Context, b batch) error {
	if len(b.changes) > 0 {
		if _, err := s.ix.Apply(index.WithSource(ctx, "kafka"), b.changes); err != nil {
			return err
		}
	}
	for _, p := range b.bad {
		if err := s.ix.DeadLetterEvent(ctx, p.where, p.raw, p.reason); err != nil {
			return err
		}
		s.DeadLetters.Add(1)
	}
	if b.skipped > 0 {
		s.ix.CountSkipped(b.skipped)
	}
	s.Tombstones.Add(int64(b.tombstones))
	s.Records.Add(int64(b.records - len(b.bad)))
	return nil
}

// parse reads one record's event in the configured format (or the one it looks like).
func (s *Source) parse(r *kgo.Record) ([]index.Change, bool, error) {
	format := s.opts.Format
	if format == index.FormatAuto {
		var err error
		if format, err = detectFormat(r.Value); err != nil {
			return nil, false, err
		}
	}
	return index.ParseLogEvent(format, json.RawMessage(r.Value), uint64(r.Offset))
}

// Where names a record in dead letters and changes (index.Change.Source):
// "kafka:<topic>/<partition>@<offset>".
func Where(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("kafka:%s/%d@%d", topic, partition, offset)
}
