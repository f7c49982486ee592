package redisqueue

import (
	"context"
	"sort"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/groups"
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

// Ack implements queue.Broker: one ackScript call (LREM processing:<consumer> -1 raw,
// scanning from the oldest in-flight entry, the one most likely to finish first), once per
// call: a copy go-redis sends again answers as the first did instead of "not in flight".
func (b *Broker) Ack(ctx context.Context, d *queue.Delivery) error {
	return b.AckBatch(ctx, []*queue.Delivery{d})[0]
}

// AckBatch implements queue.Broker: one ackScript call per consumer (the deliveries of one
// consumer of one queue share its processing list), the calls pipelined (a single call when
// all share one consumer). A delivery with a job record is acked by a settleJobScript call of
// its own, which finishes its record in the same step.
func (b *Broker) AckBatch(ctx context.Context, ds []*queue.Delivery) []error {
	errs := make([]error, len(ds))
	var valid []int
	for i, d := range ds {
		if errs[i] = queue.CheckDelivery(d); errs[i] != nil {
			continue
		}
		if queue.HasRecord(d.Raw) {
			errs[i] = b.ackJob(ctx, d) // its record changes with it: a script of its own
			continue
		}
		valid = append(valid, i)
	}
	if len(valid) == 0 {
		return errs
	}
	type consumer struct{ queue, id string }
	groups := groups.By(valid, func(i int) consumer { return consumer{ds[i].Queue, ds[i].ConsumerID} })
	calls := make([]redisscript.Call, len(groups))
	for g, idx := range groups {
		d := ds[idx[0]]
		raws := make([]any, len(idx))
		for j, i := range idx {
			raws[j] = ds[i].Raw
		}
		m := b.marker(d.Queue)
		calls[g] = redisscript.Call{Keys: m.Keys(b.keys(d.Queue).Processing(d.ConsumerID)), Args: m.Args(raws...)}
	}
	for g, cmd := range redisscript.RunPipelined(ctx, b.client, ackScript, calls) {
		ns, err := cmd.Int64Slice()
		if err == nil && len(ns) != len(groups[g]) {
			err = redstate.Errorf(redstate.EINTERNAL, "redisqueue: ack answered %d results for %d jobs", len(ns), len(groups[g]))
		}
		for j, i := range groups[g] {
			switch {
			case err != nil:
				errs[i] = mapErr(err, "ack")
			case ns[j] == 0:
				errs[i] = notInFlight(ds[i])
			}
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
	args := make([]any, 2, len(ds)+2)
	args[0], args[1] = k.JobPrefix, k.JobIndexPrefix
	for _, d := range ds {
		args = append(args, d.Raw)
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
		calls[i] = redisscript.Call{Keys: m.Keys(k.Consumers, k.Pending, k.Processing(id)), Args: m.Args(id, now, k.JobPrefix, k.JobIndexPrefix)}
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
