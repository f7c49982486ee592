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

// Job returns the record of job id. Errors: ENOTFOUND, EUNAVAILABLE.
func (a *Admin) Job(ctx context.Context, id string) (Job, error) { return a.b.Job(ctx, a.queue, id) }

// CancelJob cancels job id (Broker.CancelJob). Errors: ENOTFOUND, ECONFLICT (finished),
// EUNAVAILABLE.
func (a *Admin) CancelJob(ctx context.Context, id string) (Job, error) {
	return a.b.CancelJob(ctx, a.queue, id)
}

// Jobs lists jobs in state from cursor (Broker.Jobs). Errors: EINVALID, EUNAVAILABLE.
func (a *Admin) Jobs(ctx context.Context, state JobState, cursor string, limit int) ([]Job, string, error) {
	return a.b.Jobs(ctx, a.queue, state, cursor, limit)
}

// RequeueJob moves dead job id back to pending. Errors: ENOTFOUND, ECONFLICT (not dead),
// EUNAVAILABLE.
func (a *Admin) RequeueJob(ctx context.Context, id string) (Job, error) {
	return a.b.RequeueJob(ctx, a.queue, id)
}

// Pause stops the queue's workers taking jobs, on every instance. Errors: EUNAVAILABLE.
func (a *Admin) Pause(ctx context.Context) error { return a.b.Pause(ctx, a.queue) }

// Resume ends a Pause. Errors: EUNAVAILABLE.
func (a *Admin) Resume(ctx context.Context) error { return a.b.Resume(ctx, a.queue) }

// Paused tells whether the queue is paused. Errors: EUNAVAILABLE.
func (a *Admin) Paused(ctx context.Context) (bool, error) { return a.b.Paused(ctx, a.queue) }
