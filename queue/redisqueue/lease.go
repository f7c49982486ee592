package redisqueue

import (
	"context"
	"sort"
	"time"

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

// Ack implements queue.Broker: one ackScript call, LREM processing:<consumer> -1 raw
// (scanning from the oldest in-flight entry, the one most likely to finish first), once per
// call: a copy go-redis sends again answers as the first did instead of "not in flight".
func (b *Broker) Ack(ctx context.Context, d *queue.Delivery) error {
	if err := queue.CheckDelivery(d); err != nil {
		return err
	}
	m := b.marker(d.Queue)
	n, err := ackScript.Run(ctx, b.client, m.Keys(b.keys(d.Queue).Processing(d.ConsumerID)), m.Args(d.Raw)...).Int()
	return ackResult(d, n, err)
}

// ackResult turns ackScript's reply for d into Ack's error.
func ackResult(d *queue.Delivery, n int, err error) error {
	if err != nil {
		return mapErr(err, "ack")
	}
	if n == 0 {
		return notInFlight(d)
	}
	return nil
}

// AckBatch implements queue.Broker: one pipeline of ackScript calls, one per delivery (a
// single Ack when there is one).
func (b *Broker) AckBatch(ctx context.Context, ds []*queue.Delivery) []error {
	errs := make([]error, len(ds))
	if len(ds) == 1 {
		errs[0] = b.Ack(ctx, ds[0])
		return errs
	}
	var calls []redisscript.Call
	var acked []int // the index in ds of each call
	for i, d := range ds {
		if errs[i] = queue.CheckDelivery(d); errs[i] == nil {
			m := b.marker(d.Queue)
			calls = append(calls, redisscript.Call{Keys: m.Keys(b.keys(d.Queue).Processing(d.ConsumerID)), Args: m.Args(d.Raw)})
			acked = append(acked, i)
		}
	}
	if len(calls) == 0 {
		return errs
	}
	for j, cmd := range redisscript.RunPipelined(ctx, b.client, ackScript, calls) {
		n, err := cmd.Int()
		errs[acked[j]] = ackResult(ds[acked[j]], n, err)
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
	m := b.marker(ds[0].Queue)
	n, err := releaseScript.Run(ctx, b.client, m.Keys(k.Processing(ds[0].ConsumerID), k.Pending), m.Args(args...)...).Int()
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
		m := b.marker(name)
		calls[i] = redisscript.Call{Keys: m.Keys(k.Consumers, k.Pending, k.Processing(id)), Args: m.Args(id, now)}
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
