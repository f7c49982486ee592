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

// BrokerEnqueuer is the Enqueuer of a queue.Broker: the tick's job is a job with a record
// (Broker.EnqueueJob) whose id is the tick's id, so it can be looked up and listed like any
// job, and an enqueue of the same id while the record exists returns that job and enqueues
// nothing. A record lives from the enqueue until Retention after the job finished, so the id
// is remembered at least Retention after the first enqueue.
type BrokerEnqueuer struct {
	// Broker takes the jobs.
	Broker queue.Broker
	// Retention is how long a finished tick's job record is kept (0: queue.DefaultRetention);
	// it is the Window.
	Retention time.Duration
	// Now stamps the jobs' EnqueueTime; nil: time.Now.
	Now func() time.Time
}

// EnqueueOnce implements Enqueuer with Broker.EnqueueJob (options: the id and Retention).
// Errors: the broker's (EINVALID, EUNAVAILABLE; ECONFLICT never, as no unique lock is asked).
func (b BrokerEnqueuer) EnqueueOnce(ctx context.Context, q, id string, payload json.RawMessage) error {
	if id == "" {
		return redstate.Errorf(redstate.EINVALID, "periodic: a tick's job needs an id")
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	req, err := queue.NewJobRequest(now().UTC().Truncate(time.Second), payload, queue.JobOptions{ID: id, Retention: b.Window()})
	if err != nil {
		return err
	}
	_, _, err = b.Broker.EnqueueJob(ctx, q, req)
	return err
}

// Window is the record's retention (Retention, or queue.DefaultRetention): the least time a
// tick's id is remembered after its first enqueue.
func (b BrokerEnqueuer) Window() time.Duration {
	if b.Retention > 0 {
		return b.Retention
	}
	return queue.DefaultRetention
}
