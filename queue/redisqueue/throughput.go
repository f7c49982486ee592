package redisqueue

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
)

var _ queue.ThroughputStore = (*Broker)(nil)

// AddThroughput implements queue.ThroughputStore: HINCRBY per outcome on the minute's hash and
// its TTL, in one pipeline (MULTI, so a reader never sees a minute without its TTL set).
func (b *Broker) AddThroughput(ctx context.Context, name string, minute int64, counts map[string]int64) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if len(counts) == 0 {
		return nil
	}
	key := b.keys(name).Throughput(minute)
	_, err := b.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for outcome, n := range counts {
			p.HIncrBy(ctx, key, outcome, n)
		}
		p.Expire(ctx, key, queue.ThroughputTTL)
		return nil
	})
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
