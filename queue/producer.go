package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redstate/redstate"
)

// Producer enqueues new jobs on one queue.
type Producer struct {
	b     Broker
	queue string
	now   func() time.Time
}

// NewProducer returns a Producer for queue using the real clock. Errors: EINVALID (nil broker,
// bad queue name).
func NewProducer(b Broker, queue string) (*Producer, error) {
	if b == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "queue producer: a broker is required")
	}
	if err := ValidateQueueName(queue); err != nil {
		return nil, err
	}
	return &Producer{b: b, queue: queue, now: time.Now}, nil
}

// Enqueue enqueues a new job carrying payload (NewMessage: RetryCount 0, EnqueueTime now, a
// fresh JobID) in one round trip and returns it. Errors: EINVALID (payload not JSON),
// EUNAVAILABLE.
func (p *Producer) Enqueue(ctx context.Context, payload json.RawMessage) (Message, error) {
	m := NewMessage(p.now(), payload)
	return m, p.b.Enqueue(ctx, p.queue, m)
}
