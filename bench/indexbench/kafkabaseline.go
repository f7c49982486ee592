package indexbench

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate/index"
)

// baselineSink is the minimal equivalent of the Redis sinks users put behind Canal's MQ mode
// (go-mysql-transfer's and the Canal adapter's Redis sink): a franz-go consumer group that
// decodes each flat message and writes each row with HSET into the hash of each declared
// combination of its values (HDEL on delete), the rows of baselineChunk records per pipeline
// (retried until written), then marks them for commit.
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
		for start := 0; start < len(recs); start += baselineChunk {
			chunk := recs[start:min(start+baselineChunk, len(recs))]
			for s.write(ctx, chunk) != nil {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(100 * time.Millisecond):
				}
			}
			cl.MarkCommitRecords(chunk...)
			s.records.Add(int64(len(chunk)))
		}
	}
	return nil
}

// baselineChunk is how many records the baseline writes per pipeline (about 2,000 commands
// for the bench's messages), so that no pipeline outlasts the client's timeouts.
const baselineChunk = 100

// write applies the rows of recs in one pipeline; a failure is kept for failure().
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
	if err != nil {
		msg := err.Error()
		s.lastErr.Store(&msg)
	}
	return err
}
