package redisqueue

import (
	"context"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/queue"
)

// Heartbeat implements queue.Broker: one script, ZADD consumers <now+lease> <consumer>, "now"
// being the Redis server clock (or Options.Now).
func (b *Broker) Heartbeat(ctx context.Context, name, consumerID string, lease time.Duration) error {
	if err := queue.ValidateNames(name, consumerID); err != nil {
		return err
	}
	if lease <= 0 {
		return redstate.Errorf(redstate.EINVALID, "lease must be > 0")
	}
	ms := max(lease.Milliseconds(), 1)
	err := heartbeatScript.Run(ctx, b.client, []string{b.keys(name).Consumers}, consumerID, ms, b.nowArg()).Err()
	return mapErr(err, "heartbeat")
}

// Ack implements queue.Broker: one LREM processing:<consumer> -1 raw (scanning from the
// oldest in-flight entry, the one most likely to finish first).
func (b *Broker) Ack(ctx context.Context, d *queue.Delivery) error {
	if err := queue.CheckDelivery(d); err != nil {
		return err
	}
	n, err := b.client.LRem(ctx, b.keys(d.Queue).Processing(d.ConsumerID), -1, d.Raw).Result()
	if err != nil {
		return mapErr(err, "ack")
	}
	if n == 0 {
		return notInFlight(d)
	}
	return nil
}

// AckBatch implements queue.Broker: one pipeline of LREM processing:<consumer> -1 raw, one
// per delivery (a single Ack when there is one).
func (b *Broker) AckBatch(ctx context.Context, ds []*queue.Delivery) []error {
	errs := make([]error, len(ds))
	if len(ds) == 1 {
		errs[0] = b.Ack(ctx, ds[0])
		return errs
	}
	cmds := make([]*redis.IntCmd, len(ds))
	pipe := b.client.Pipeline()
	for i, d := range ds {
		if errs[i] = queue.CheckDelivery(d); errs[i] == nil {
			cmds[i] = pipe.LRem(ctx, b.keys(d.Queue).Processing(d.ConsumerID), -1, d.Raw)
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx)
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		switch n, err := cmd.Result(); {
		case err != nil:
			errs[i] = mapErr(err, "ack")
		case n == 0:
			errs[i] = notInFlight(ds[i])
		}
	}
	return errs
}

// Release implements queue.Broker: one releaseScript call.
func (b *Broker) Release(ctx context.Context, ds []*queue.Delivery) (int, error) {
	if err := queue.CheckReleaseBatch(ds); err != nil {
		return 0, err
	}
	if len(ds) == 0 {
		return 0, nil
	}
	k := b.keys(ds[0].Queue)
	args := make([]any, len(ds))
	for i, d := range ds {
		args[i] = d.Raw
	}
	n, err := releaseScript.Run(ctx, b.client, []string{k.Processing(ds[0].ConsumerID), k.Pending}, args...).Int()
	if err != nil {
		return 0, mapErr(err, "release")
	}
	return n, nil
}

// RecoverExpired implements queue.Broker in two round trips: expiredScript lists the consumers
// whose deadline has passed, then one pipeline runs recoverScript per consumer (its
// processing list must be in KEYS, so it cannot be found inside one script). recoverScript
// re-checks the deadline atomically, so concurrent recoverers move each job once and a
// consumer that renewed its lease in between keeps its jobs. Consumers are recovered in
// descending id order, so the jobs of the smallest id end up dequeued first (memqueue's
// order); each consumer's jobs keep their dequeue order.
func (b *Broker) RecoverExpired(ctx context.Context, name string) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	k := b.keys(name)
	now := b.nowArg()
	ids, err := expiredScript.Run(ctx, b.client, []string{k.Consumers}, now).StringSlice()
	if err != nil {
		return 0, mapErr(err, "recover expired")
	}
	if len(ids) == 0 {
		return 0, nil
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	calls := make([]redisscript.Call, len(ids))
	for i, id := range ids {
		calls[i] = redisscript.Call{Keys: []string{k.Consumers, k.Pending, k.Processing(id)}, Args: []any{id, now}}
	}
	total := 0
	var firstErr error
	for _, cmd := range redisscript.RunPipelined(ctx, b.client, recoverScript, calls) {
		n, err := cmd.Int()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		total += n
	}
	if firstErr != nil {
		return total, mapErr(firstErr, "recover expired")
	}
	return total, nil
}

// InFlight implements queue.Broker with one LRANGE of the consumer's processing list (newest
// dequeue at its left end: the oldest MaxInFlightListed are its right end).
func (b *Broker) InFlight(ctx context.Context, name, consumerID string) ([]*queue.Delivery, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	if err := queue.ValidateConsumerID(consumerID); err != nil {
		return nil, err
	}
	raws, err := b.client.LRange(ctx, b.keys(name).Processing(consumerID), -queue.MaxInFlightListed, -1).Result()
	if err != nil {
		return nil, mapErr(err, "in flight")
	}
	out := make([]*queue.Delivery, len(raws))
	for i, raw := range raws {
		out[len(raws)-1-i] = queue.NewDelivery(name, consumerID, raw)
	}
	return out, nil
}
