package redisqueue

import (
	"context"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Enqueue implements queue.Broker: one LPUSH of the encoded message onto the pending list.
func (b *Broker) Enqueue(ctx context.Context, name string, msg queue.Message) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return b.push(ctx, name, string(raw))
}

// EnqueueRaw implements queue.Broker: one LPUSH of raw, verbatim, as the seed's legacy
// producer does (`LPUSH <queue> '{"RetryCount":0,…}'`).
func (b *Broker) EnqueueRaw(ctx context.Context, name, raw string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if raw == "" {
		return redstate.Errorf(redstate.EINVALID, "empty message")
	}
	return b.push(ctx, name, raw)
}

// push LPUSHes raw onto the pending list of name.
func (b *Broker) push(ctx context.Context, name, raw string) error {
	return mapErr(b.client.LPush(ctx, b.keys(name).Pending, raw).Err(), "enqueue")
}
