package indexbench

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate/index"
)

// baselineSink is the minimal equivalent of the Redis sinks users put behind Canal's MQ mode
// (go-mysql-transfer's and the Canal adapter's Redis sink): a franz-go consumer group that
// decodes each flat message and writes each row with HSET into the hash of each declared
// combination of its values (HDEL on delete), all rows of a poll in one pipeline, then commits.
// It has no version check (a replay or a reordering writes old data), no relation key (an
// update that moves a row leaves it in its old hash too) and no dead letters: what ours pays
// for, it skips.
type baselineSink struct {
	client  redis.UniversalClient
	brokers []string
	topic   string
	group   string
	spec    index.TableSpec
	keys    index.Keys
	// records counts the records applied.
	records atomic.Int64
	// lastErr is the last failure.
	lastErr atomic.Pointer[string]
}

func newBaselineSink(client redis.UniversalClient, brokers []string, topic, group string, spec index.TableSpec, keys index.Keys) *baselineSink {
	return &baselineSink{client: client, brokers: brokers, topic: topic, group: group, spec: spec, keys: keys}
}

// failure is the last failure ("" when none).
func (s *baselineSink) failure() string {
	if f := s.lastErr.Load(); f != nil {
		return *f
	}
	return ""
}

// run consumes until ctx ends.
func (s *baselineSink) run(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.ConsumerGroup(s.group), kgo.ConsumeTopics(s.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitMarks())
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, 10000)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		recs := fetches.Records()
		if len(recs) == 0 {
			continue
		}
		if err := s.write(ctx, recs); err != nil {
			msg := err.Error()
			s.lastErr.Store(&msg)
			continue
		}
		cl.MarkCommitRecords(recs...)
		s.records.Add(int64(len(recs)))
	}
	return nil
}

// write applies the rows of recs in one pipeline.
func (s *baselineSink) write(ctx context.Context, recs []*kgo.Record) error {
	var m struct {
		Data []map[string]*string `json:"data"`
		Type string               `json:"type"`
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range recs {
			m.Data = nil
			if json.Unmarshal(r.Value, &m) != nil {
				continue
			}
			for _, row := range m.Data {
				id := row[s.spec.Key]
				if id == nil {
					continue
				}
				value, _ := json.Marshal(row)
				for _, d := range s.spec.Dimensions {
					vals := make([]*string, len(d))
					for i, part := range d {
						vals[i] = row[part.Column]
					}
					if m.Type == "DELETE" {
						p.HDel(ctx, s.keys.Index(d, vals), *id)
					} else {
						p.HSet(ctx, s.keys.Index(d, vals), *id, value)
					}
				}
			}
		}
		return nil
	})
	return err
}
