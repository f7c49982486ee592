package redisqueue

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/queue"
)

var _ queue.ThroughputStore = (*Broker)(nil)

// AddThroughput implements queue.ThroughputStore: AddThroughputBatch with a batch id of its
// own.
func (b *Broker) AddThroughput(ctx context.Context, name string, minute int64, counts map[string]int64) error {
	return b.AddThroughputBatch(ctx, name, minute, queue.NewJobID(), counts)
}

// AddThroughputBatch implements queue.ThroughputStore: one throughputScript call (HINCRBY per
// outcome on the minute's hash and its TTL, atomically, so a reader never sees a minute
// without its TTL set), once per batch id: the call's marker is the batch's, so neither a copy
// go-redis sends again nor the caller's repeat of a batch that failed counts twice.
func (b *Broker) AddThroughputBatch(ctx context.Context, name string, minute int64, batch string, counts map[string]int64) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if err := queue.ValidateBatchID(batch); err != nil {
		return err
	}
	if len(counts) == 0 {
		return nil
	}
	args := make([]any, 0, 1+2*len(counts))
	args = append(args, int64(queue.ThroughputTTL/time.Second))
	for outcome, n := range counts {
		args = append(args, outcome, n)
	}
	k := b.keys(name)
	m := resend.Marker{Key: k.Once("batch-" + batch), Window: b.window}
	err := throughputScript.Run(ctx, b.client, m.Keys(k.Throughput(minute)), m.Args(args...)...).Err()
	return mapErr(err, "add throughput")
}

// Throughput implements queue.ThroughputStore: one pipelined HGETALL per minute.
func (b *Broker) Throughput(ctx context.Context, name string, from, to int64) (map[int64]map[string]int64, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	if err := queue.ValidateThroughputRange(from, to); err != nil {
		return nil, err
	}
	k := b.keys(name)
	cmds := make([]*redis.MapStringStringCmd, 0, to-from+1)
	_, err := b.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for m := from; m <= to; m++ {
			cmds = append(cmds, p.HGetAll(ctx, k.Throughput(m)))
		}
		return nil
	})
	if err != nil {
		return nil, mapErr(err, "throughput")
	}
	out := map[int64]map[string]int64{}
	for i, cmd := range cmds {
		if len(cmd.Val()) == 0 {
			continue
		}
		counts := make(map[string]int64, len(cmd.Val()))
		for outcome, v := range cmd.Val() {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				counts[outcome] = n
			}
		}
		out[from+int64(i)] = counts
	}
	return out, nil
}
