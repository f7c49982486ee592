package periodic

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Enqueuer puts a tick's job on its queue under the tick's id.
type Enqueuer interface {
	// EnqueueOnce enqueues a job carrying payload on queue with job id id, unless a job with
	// that id was enqueued on queue less than Window ago: then it enqueues nothing and returns
	// nil. An EnqueueOnce that failed (applied or not) may be repeated.
	EnqueueOnce(ctx context.Context, queue, id string, payload json.RawMessage) error
	// Window is how long an id is remembered: a repeat later than that may be a second job.
	Window() time.Duration
}

// BrokerEnqueuer is the Enqueuer of a queue.Broker: the job is a queue.Message whose JobID is
// the tick's id, and the broker's job-id marker (queue.DedupWindow) makes a repeat within the
// window a no-op.
type BrokerEnqueuer struct {
	// Broker takes the jobs.
	Broker queue.Broker
	// Now stamps the jobs' EnqueueTime; nil: time.Now.
	Now func() time.Time
}

// EnqueueOnce implements Enqueuer with Broker.Enqueue. Errors: the broker's (EINVALID,
// EUNAVAILABLE).
func (b BrokerEnqueuer) EnqueueOnce(ctx context.Context, q, id string, payload json.RawMessage) error {
	if id == "" {
		return redstate.Errorf(redstate.EINVALID, "periodic: a tick's job needs an id")
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	return b.Broker.Enqueue(ctx, q, queue.Message{EnqueueTime: now().UTC().Truncate(time.Second), Payload: payload, JobID: id})
}

// Window is queue.DedupWindow: the broker marks a job id enqueued that long (or longer).
func (BrokerEnqueuer) Window() time.Duration { return queue.DedupWindow }
