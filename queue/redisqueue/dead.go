package redisqueue

import (
	"context"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Bury implements queue.Broker: one script, LREM processing:<consumer> -1 raw then LPUSH dead
// <msg>.
func (b *Broker) Bury(ctx context.Context, d *queue.Delivery, msg queue.Message) error {
	if err := queue.CheckDelivery(d); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(msg)
	if err != nil {
		return err
	}
	k := b.keys(d.Queue)
	if queue.HasRecord(d.Raw) {
		return b.settleJob(ctx, d, queue.StateDead, k.Dead, string(raw), 0, msg.LastError)
	}
	m := b.marker(d.Queue)
	n, err := buryScript.Run(ctx, b.client, m.Keys(k.Processing(d.ConsumerID), k.Dead), m.Args(d.Raw, string(raw))...).Int()
	if err != nil {
		return mapErr(err, "bury")
	}
	if n == 0 {
		return notInFlight(d)
	}
	return nil
}

// DeadLetters implements queue.Broker: one LRANGE dead start start+count-1 (newest first).
func (b *Broker) DeadLetters(ctx context.Context, name string, start, count int) ([]queue.DeadLetter, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	if start < 0 || count < 1 || count > queue.MaxListCount {
		return nil, redstate.Errorf(redstate.EINVALID, "start must be >= 0 and count 1..%d", queue.MaxListCount)
	}
	raws, err := b.client.LRange(ctx, b.keys(name).Dead, int64(start), int64(start+count-1)).Result()
	if err != nil {
		return nil, mapErr(err, "dead letters")
	}
	out := make([]queue.DeadLetter, len(raws))
	for i, raw := range raws {
		out[i] = queue.NewDeadLetter(raw)
	}
	return out, nil
}

// RequeueDead implements queue.Broker: one script, LREM dead 1 raw then LPUSH pending raw.
func (b *Broker) RequeueDead(ctx context.Context, name, raw string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if raw == "" {
		return redstate.Errorf(redstate.EINVALID, "empty message")
	}
	k := b.keys(name)
	m := b.marker(name)
	n, err := requeueDeadScript.Run(ctx, b.client, m.Keys(k.Dead, k.Pending), m.Args(raw, k.JobPrefix, k.JobIndexPrefix)...).Int()
	if err != nil {
		return mapErr(err, "requeue dead letter")
	}
	if n == 0 {
		return redstate.Errorf(redstate.ENOTFOUND, "no such dead letter on queue %q", name)
	}
	return nil
}

// RequeueAllDead implements queue.Broker: one script moving every dead letter, oldest first,
// to the tail of the pending list.
func (b *Broker) RequeueAllDead(ctx context.Context, name string) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	k := b.keys(name)
	m := b.marker(name)
	n, err := requeueAllDeadScript.Run(ctx, b.client, m.Keys(k.Dead, k.Pending), m.Args(k.JobPrefix, k.JobIndexPrefix)...).Int()
	if err != nil {
		return 0, mapErr(err, "requeue dead letters")
	}
	return n, nil
}

// PurgeDead implements queue.Broker: one script, LLEN then DEL of the dead list.
func (b *Broker) PurgeDead(ctx context.Context, name string) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	m := b.marker(name)
	n, err := purgeDeadScript.Run(ctx, b.client, m.Keys(b.keys(name).Dead), m.Args()...).Int()
	if err != nil {
		return 0, mapErr(err, "purge dead letters")
	}
	return n, nil
}
