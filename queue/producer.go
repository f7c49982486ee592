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

// EnqueueJob enqueues a new job carrying payload with a record and the per-job options opts
// (NewJobRequest, Broker.EnqueueJob) in one atomic step, and returns the job as recorded. With
// opts.ID set, a job of that id whose record still exists is returned with created false and
// nothing is enqueued (an idempotent retry of the call). Errors: EINVALID (payload not JSON,
// bad options), ECONFLICT (opts.UniqueFor: another job holds the lock; the message names it),
// EUNAVAILABLE.
func (p *Producer) EnqueueJob(ctx context.Context, payload json.RawMessage, opts JobOptions) (job Job, created bool, err error) {
	req, err := NewJobRequest(p.now(), payload, opts)
	if err != nil {
		return Job{}, false, err
	}
	return p.b.EnqueueJob(ctx, p.queue, req)
}

// Queue returns the name of the producer's queue.
func (p *Producer) Queue() string { return p.queue }
