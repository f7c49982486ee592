package queue

import (
	"context"

	"github.com/redstate/redstate"
)

// Admin holds the back-office operations of one queue: its counts and the management of its
// dead-letter list. Its errors are *redstate.Error values.
type Admin struct {
	b     Broker
	queue string
}

// NewAdmin returns the Admin of queue on b. Errors: EINVALID (nil broker, bad queue name).
func NewAdmin(b Broker, queue string) (*Admin, error) {
	if b == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "queue admin: a broker is required")
	}
	if err := ValidateQueueName(queue); err != nil {
		return nil, err
	}
	return &Admin{b: b, queue: queue}, nil
}

// Queue returns the name of the queue.
func (a *Admin) Queue() string { return a.queue }

// Stats returns the queue's counts. Errors: EUNAVAILABLE.
func (a *Admin) Stats(ctx context.Context) (Stats, error) { return a.b.Stats(ctx, a.queue) }

// DeadLetters lists dead letters, newest first. Errors: EINVALID, EUNAVAILABLE.
func (a *Admin) DeadLetters(ctx context.Context, start, count int) ([]DeadLetter, error) {
	return a.b.DeadLetters(ctx, a.queue, start, count)
}

// RequeueDead moves one dead letter back to the pending list, unchanged.
// Errors: ENOTFOUND, EUNAVAILABLE.
func (a *Admin) RequeueDead(ctx context.Context, raw string) error {
	return a.b.RequeueDead(ctx, a.queue, raw)
}

// RequeueAllDead moves every dead letter back to the pending list. Errors: EUNAVAILABLE.
func (a *Admin) RequeueAllDead(ctx context.Context) (int, error) {
	return a.b.RequeueAllDead(ctx, a.queue)
}

// PurgeDead deletes every dead letter. Errors: EUNAVAILABLE.
func (a *Admin) PurgeDead(ctx context.Context) (int, error) { return a.b.PurgeDead(ctx, a.queue) }
