package redisqueue

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// scanChunk is how many entries of one list or sorted set HasJob reads per command.
const scanChunk = 1000

// snapshotAttempts bounds how often Stats and HasJob re-read when the consumer set changed
// between their two round trips.
const snapshotAttempts = 3

// consumers returns the consumer ids of the lease ZSET (ids that are not valid consumer ids,
// which Heartbeat never writes, are skipped: they must not become keys).
func (b *Broker) consumers(ctx context.Context, k queue.Keys) ([]string, error) {
	ids, err := b.client.ZRange(ctx, k.Consumers, 0, -1).Result()
	if err != nil {
		return nil, err
	}
	return validIDs(ids), nil
}

// validIDs returns the ids that pass queue.ValidateConsumerID.
func validIDs(ids []string) []string {
	out := ids[:0:0]
	for _, id := range ids {
		if queue.ValidateConsumerID(id) == nil {
			out = append(out, id)
		}
	}
	return out
}

// Stats implements queue.Broker in two round trips: ZRANGE consumers, then one MULTI with
// ZRANGE consumers (to confirm the set), LLEN pending, ZCARD retry, LLEN dead and LLEN of each
// consumer's processing list. The counts are therefore one atomic snapshot (re-read if the
// consumer set changed in between); Running is O(consumers). Jobs stranded in the processing
// list of a consumer that is no longer in the lease set are not counted (see Dequeue).
func (b *Broker) Stats(ctx context.Context, name string) (queue.Stats, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return queue.Stats{}, err
	}
	k := b.keys(name)
	consumers, err := b.consumers(ctx, k)
	if err != nil {
		return queue.Stats{}, mapErr(err, "stats")
	}
	for attempt := 1; ; attempt++ {
		var zr *redis.StringSliceCmd
		var pending, retry, scheduled, dead *redis.IntCmd
		procs := make([]*redis.IntCmd, len(consumers))
		_, err := b.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			zr = p.ZRange(ctx, k.Consumers, 0, -1)
			pending = p.LLen(ctx, k.Pending)
			retry = p.ZCard(ctx, k.Retry)
			scheduled = p.ZCard(ctx, k.Scheduled)
			dead = p.LLen(ctx, k.Dead)
			for i, c := range consumers {
				procs[i] = p.LLen(ctx, k.Processing(c))
			}
			return nil
		})
		if err != nil {
			return queue.Stats{}, mapErr(err, "stats")
		}
		if now := validIDs(zr.Val()); !slices.Equal(now, consumers) && attempt < snapshotAttempts {
			consumers = now
			continue
		}
		st := queue.Stats{Pending: pending.Val(), Retrying: retry.Val(), Scheduled: scheduled.Val(), Dead: dead.Val()}
		for _, c := range procs {
			st.Running += c.Val()
		}
		return st, nil
	}
}

// HasJob implements queue.Broker. It reads the consumer set, then in one MULTI the first
// scanChunk entries of the pending list, the retry schedule and every processing list, so
// that for queues shorter than that the answer comes from one atomic snapshot (two round
// trips; re-read if the consumer set changed). Longer structures are read on in chunks of
// scanChunk, outside the snapshot: a job moving between places meanwhile may then be missed,
// which makes a caller that enqueues when no job is found enqueue a duplicate job (at-least-once), never lose one.
// Entries are decoded in Go; malformed ones are skipped.
func (b *Broker) HasJob(ctx context.Context, name string, want func(queue.Message) bool) (bool, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return false, err
	}
	if want == nil {
		return false, redstate.Errorf(redstate.EINVALID, "has job: no predicate")
	}
	match := func(raws []string) bool {
		for _, raw := range raws {
			if m, err := queue.DecodeMessage([]byte(raw)); err == nil && want(m) {
				return true
			}
		}
		return false
	}
	k := b.keys(name)
	consumers, err := b.consumers(ctx, k)
	if err != nil {
		return false, mapErr(err, "has job")
	}
	for attempt := 1; ; attempt++ {
		var zr, pending, retry *redis.StringSliceCmd
		procs := make([]*redis.StringSliceCmd, len(consumers))
		_, err := b.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			zr = p.ZRange(ctx, k.Consumers, 0, -1)
			pending = p.LRange(ctx, k.Pending, 0, scanChunk-1)
			retry = p.ZRange(ctx, k.Retry, 0, scanChunk-1)
			for i, c := range consumers {
				procs[i] = p.LRange(ctx, k.Processing(c), 0, scanChunk-1)
			}
			return nil
		})
		if err != nil {
			return false, mapErr(err, "has job")
		}
		if now := validIDs(zr.Val()); !slices.Equal(now, consumers) && attempt < snapshotAttempts {
			consumers = now
			continue
		}
		type rest struct {
			key   string
			zset  bool
			first []string
		}
		places := []rest{{k.Pending, false, pending.Val()}, {k.Retry, true, retry.Val()}}
		for i, c := range consumers {
			places = append(places, rest{k.Processing(c), false, procs[i].Val()})
		}
		for _, pl := range places {
			if match(pl.first) {
				return true, nil
			}
		}
		for _, pl := range places {
			for start, n := int64(scanChunk), len(pl.first); n == scanChunk; start += scanChunk {
				var raws []string
				var err error
				if pl.zset {
					raws, err = b.client.ZRange(ctx, pl.key, start, start+scanChunk-1).Result()
				} else {
					raws, err = b.client.LRange(ctx, pl.key, start, start+scanChunk-1).Result()
				}
				if err != nil {
					return false, mapErr(err, "has job")
				}
				if match(raws) {
					return true, nil
				}
				n = len(raws)
			}
		}
		return false, nil
	}
}
