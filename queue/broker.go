package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/ctxsleep"
)

// Broker is the queue's storage contract: named FIFO queues of jobs with per-consumer in-flight
// sets, consumer leases, a retry schedule and a dead-letter list. The Redis backend
// (redisqueue) and the memory backend (memqueue) implement it with identical semantics, checked
// by the queuetest conformance suite. Implementations must be safe for concurrent use.
//
// Queue names and consumer ids must pass ValidateQueueName / ValidateConsumerID; a Broker returns
// EINVALID for any other value and never turns it into a key. Every error is a *redstate.Error,
// possibly wrapped; EUNAVAILABLE means the backend could not be reached and the call may be
// retried.
//
// Life of a job: Enqueue/EnqueueRaw puts it on the pending list; Dequeue (or DequeueBatch)
// atomically moves it to the dequeuing consumer's in-flight set; from there exactly one of Ack
// or AckBatch (done), Retry (into the retry schedule, later moved back to pending by
// PromoteDue), Bury (onto the dead list), Release (back to the head of pending, never started)
// or RecoverExpired (back to pending, because the consumer's lease expired) takes it out. A job is
// therefore always in exactly one place, and is lost only if explicitly acked or purged.
type Broker interface {
	// Enqueue encodes msg (EncodeMessage) and appends it to the tail of queue's pending list in
	// one round trip (Redis: a script that LPUSHes the encoded message). Jobs are dequeued in
	// enqueue order (FIFO). A message whose JobID was enqueued on queue less than DedupWindow
	// ago is a copy of that job: Enqueue returns nil and appends nothing. So an Enqueue that
	// failed with EUNAVAILABLE (applied or not) may be repeated with the same message, and a
	// command the Redis client re-sends lands once. Messages without a JobID are never
	// deduplicated.
	// Errors: EINVALID (bad queue name, msg.Validate fails), EUNAVAILABLE.
	Enqueue(ctx context.Context, queue string, msg Message) error

	// EnqueueRaw appends raw, verbatim, to the tail of queue's pending list: the legacy-producer
	// path (a producer that LPUSHes its own JSON onto the list). raw need not be a valid Message;
	// a malformed one is delivered with Delivery.DecodeErr set.
	// Errors: EINVALID (bad queue name, empty raw), EUNAVAILABLE.
	EnqueueRaw(ctx context.Context, queue, raw string) error

	// Dequeue takes the job at the head of queue's pending list and, in the same atomic step,
	// adds it to consumerID's in-flight set (Redis: BLMOVE pending → processing:<consumer>). If
	// the list is empty it blocks until a job arrives, timeout passes or ctx ends, without
	// polling; on timeout it returns (nil, nil). consumerID must hold a live lease (Heartbeat
	// first). The returned Delivery carries the exact stored string and its decoding; a string
	// that is not a valid Message is still delivered, with DecodeErr set, so that the caller can
	// dead-letter it with the reason (Bury).
	// Errors: EINVALID (bad queue name or consumer id, timeout <= 0), ECONFLICT (consumerID holds
	// no live lease), EUNAVAILABLE, or ctx.Err() when ctx ended.
	Dequeue(ctx context.Context, queue, consumerID string, timeout time.Duration) (*Delivery, error)

	// DequeueBatch is Dequeue for up to max jobs (prefetch): in one atomic step it checks
	// consumerID's lease once and moves up to max jobs from the head of queue's pending list to
	// consumerID's in-flight set, returning them in pending order (the first is the one Dequeue
	// would have returned). The jobs are in-flight exactly as if dequeued one by one: each is
	// settled separately, and all are recovered with the consumer's other jobs if its lease
	// expires. If the pending list is empty it blocks like Dequeue until one job arrives and
	// returns that one; on timeout it returns (nil, nil). A timeout that has run out by the time
	// the list is found empty (a pool's probe: 1ns) makes it one attempt that does not wait.
	// Errors: as Dequeue, and EINVALID when max < 1.
	DequeueBatch(ctx context.Context, queue, consumerID string, max int, timeout time.Duration) ([]*Delivery, error)

	// Release gives back deliveries that were dequeued but never started (a prefetching
	// consumer shutting down): in one atomic step it removes each of ds still in-flight at its
	// consumer and puts them back at the head of their queue's pending list, in the order of ds,
	// so that ds[0] is dequeued next, ahead of every job that was pending. Deliveries that are no
	// longer in flight (recovered after a lease expiry) are skipped. It returns how many it
	// moved. All of ds must share one queue and consumer.
	// Errors: EINVALID (nil or incomplete delivery, mixed queues or consumers), EUNAVAILABLE.
	Release(ctx context.Context, ds []*Delivery) (int, error)

	// Heartbeat registers consumerID as alive on queue until now+lease (replacing any earlier
	// deadline). Jobs in-flight at a consumer whose deadline has passed are recovered by
	// RecoverExpired; a consumer renews its lease well before it expires (Worker: every lease/3).
	// Errors: EINVALID (bad names, lease <= 0), EUNAVAILABLE.
	Heartbeat(ctx context.Context, queue, consumerID string, lease time.Duration) error

	// Ack removes the delivery from its consumer's in-flight set: the job is done.
	// Errors: EINVALID (nil or incomplete delivery), ECONFLICT (the delivery is no longer
	// in-flight at that consumer: its lease expired and the job was recovered), EUNAVAILABLE.
	Ack(ctx context.Context, d *Delivery) error

	// AckBatch acks every delivery of ds (any queues and consumers) as Ack does, in one round
	// trip per Redis node, and returns one error per delivery, in order: nil (acked), EINVALID,
	// ECONFLICT (as Ack) or EUNAVAILABLE (the outcome of that ack is unknown: it may or may not
	// have been applied). Each ack is atomic on its own; the batch as a whole is not.
	AckBatch(ctx context.Context, ds []*Delivery) []error

	// Retry atomically removes the delivery from its consumer's in-flight set and adds next
	// (encoded) to queue's retry schedule, due at due (Redis: ZADD with the due time as score).
	// Identical encoded messages collapse into one schedule entry (sorted-set semantics); jobs
	// carrying a JobID never collide. Errors: EINVALID, ECONFLICT (as Ack), EUNAVAILABLE.
	Retry(ctx context.Context, d *Delivery, next Message, due time.Time) error

	// Bury atomically removes the delivery from its consumer's in-flight set and puts msg
	// (encoded) at the head of queue's dead-letter list (Redis: LPUSH <queue>:dead).
	// Errors: EINVALID, ECONFLICT (as Ack), EUNAVAILABLE.
	Bury(ctx context.Context, d *Delivery, msg Message) error

	// PromoteDue moves up to limit retry-schedule entries due at or before now, earliest due
	// first, to the tail of queue's pending list, atomically per entry, and returns how many it
	// moved. Entries not yet due stay. Errors: EINVALID (bad queue, limit <= 0), EUNAVAILABLE.
	PromoteDue(ctx context.Context, queue string, now time.Time, limit int) (int, error)

	// RecoverExpired moves every job in-flight at a consumer whose lease deadline has passed
	// (by the backend's clock) back to the head of queue's pending list, so it is dequeued
	// before jobs enqueued after it, and forgets that consumer. It returns the number of jobs
	// moved. Safe to call concurrently from many processes; each job is moved once.
	// Errors: EINVALID, EUNAVAILABLE.
	RecoverExpired(ctx context.Context, queue string) (int, error)

	// InFlight returns the jobs in flight at consumerID on queue, oldest dequeue first, at most
	// MaxInFlightListed of them. A worker compares them with the jobs it holds to find jobs
	// it does not know it has: a settle (Ack, Retry, Bury) that a Redis failover rolled back
	// after the worker saw it succeed, or a dequeue whose reply never arrived. Such jobs would
	// otherwise stay in flight for as long as the worker keeps its lease.
	// Errors: EINVALID (bad queue name or consumer id), EUNAVAILABLE.
	InFlight(ctx context.Context, queue, consumerID string) ([]*Delivery, error)

	// Stats counts queue's jobs in each place. Each count is O(1) or O(consumers).
	// Errors: EINVALID, EUNAVAILABLE.
	Stats(ctx context.Context, queue string) (Stats, error)

	// DeadLetters returns up to count dead letters of queue starting at offset start, newest
	// first. Errors: EINVALID (bad queue, start < 0, count outside 1..MaxListCount),
	// EUNAVAILABLE.
	DeadLetters(ctx context.Context, queue string, start, count int) ([]DeadLetter, error)

	// RequeueDead atomically removes one dead letter whose stored string equals raw and appends
	// it, unchanged, to the tail of queue's pending list. Its RetryCount is kept, so a job that
	// had exhausted its retries gets exactly one more attempt (enqueue a new job for a fresh
	// start). Errors: EINVALID, ENOTFOUND (no such dead letter), EUNAVAILABLE.
	RequeueDead(ctx context.Context, queue, raw string) error

	// RequeueAllDead atomically moves every dead letter to the tail of queue's pending list,
	// oldest first, and returns how many it moved. Errors: EINVALID, EUNAVAILABLE.
	RequeueAllDead(ctx context.Context, queue string) (int, error)

	// PurgeDead deletes every dead letter of queue and returns how many it deleted.
	// Errors: EINVALID, EUNAVAILABLE.
	PurgeDead(ctx context.Context, queue string) (int, error)

	// HasJob tells whether a job for which want returns true is pending, in-flight at any
	// consumer or waiting in the retry schedule (dead letters do not count). It decodes every
	// entry, so it is O(queue length): meant for background repair (e.g. re-enqueueing a job
	// a failed enqueue lost), not for request paths. Malformed entries are skipped.
	// Errors: EINVALID (bad queue, nil want), EUNAVAILABLE.
	HasJob(ctx context.Context, queue string, want func(Message) bool) (bool, error)

	JobBroker
}

// DueReader is implemented by brokers that can tell when a queue's next scheduled job or retry
// falls due: a Worker then wakes to promote it at that time rather than at its next periodic
// PromoteDue. Both of redstate's brokers implement it.
type DueReader interface {
	// NextDue returns the earliest due time in queue's retry schedule and scheduled set, and
	// false when both are empty. Errors: EINVALID, EUNAVAILABLE.
	NextDue(ctx context.Context, queue string) (time.Time, bool, error)
}

// JobBroker is the part of the Broker that keeps job records: jobs enqueued with EnqueueJob
// (their message carries a Job spec and starts with RecordPrefix) have a record, written in the
// same atomic step as every move of the job (enqueue, start, ack, retry, bury, promote, release,
// recover, requeue, cancel). Messages without a Job spec (Enqueue, EnqueueRaw, a legacy LPUSH)
// have none and cost nothing more. See docs/queue.md, "Jobs with a record".
type JobBroker interface {
	// EnqueueJob stores a new job with its record in one atomic step: on the pending list, or
	// in the scheduled set when req.ProcessAt is after now (PromoteDue moves it to pending at
	// that time). If a record of the job id exists it enqueues nothing and returns that job with
	// created false. If req.UniqueFor > 0 and another job holds req.UniqueKey's lock, it
	// enqueues nothing and fails with ECONFLICT naming that job; otherwise it takes the lock
	// for req.UniqueFor. Errors: EINVALID (bad queue name, req.Validate), ECONFLICT,
	// EUNAVAILABLE.
	EnqueueJob(ctx context.Context, queue string, req JobRequest) (job Job, created bool, err error)

	// Job returns the record of job id. Errors: EINVALID, ENOTFOUND (no record: never enqueued
	// with EnqueueJob, or finished longer than its retention ago), EUNAVAILABLE.
	Job(ctx context.Context, queue, id string) (Job, error)

	// StartJob is the step between dequeue and handler for a delivery with a record
	// (HasRecord(d.Raw)): atomically, if the job was cancelled it is removed from the in-flight
	// list (JobCancelled), if the queue is paused it is put back at the head of pending
	// (JobPaused), else its record turns active with a new attempt (JobRun). A cancel that
	// races with a dequeue is thus seen before the handler runs. Errors: EINVALID, ECONFLICT (not
	// in flight), EUNAVAILABLE.
	StartJob(ctx context.Context, d *Delivery) (JobStart, error)

	// CancelJob cancels job id: a scheduled, pending or retrying job is removed from its place
	// and its record set cancelled in one step (it never runs; one dequeued but not started is
	// refused by StartJob); an active job gets a cancel request (CancelRequested) and stays
	// active until its worker settles it. It returns the job after the step.
	// Errors: EINVALID, ENOTFOUND, ECONFLICT (done, dead or cancelled already), EUNAVAILABLE.
	CancelJob(ctx context.Context, queue, id string) (Job, error)

	// CancelRequested returns those of ids (active jobs on queue) whose cancel was requested.
	// Errors: EINVALID, EUNAVAILABLE.
	CancelRequested(ctx context.Context, queue string, ids []string) ([]string, error)

	// Jobs lists up to limit jobs in state, oldest transition first, from cursor ("" for the
	// start); next is the cursor of the following page, "" after the last one.
	// Errors: EINVALID (bad queue, state, cursor, limit outside 1..MaxListCount), EUNAVAILABLE.
	Jobs(ctx context.Context, queue string, state JobState, cursor string, limit int) (jobs []Job, next string, err error)

	// RequeueJob moves dead job id from the dead-letter list to the tail of pending, unchanged
	// (as RequeueDead), and returns it. Errors: EINVALID, ENOTFOUND (no record, or its dead
	// letter was purged), ECONFLICT (not dead), EUNAVAILABLE.
	RequeueJob(ctx context.Context, queue, id string) (Job, error)

	// Pause stops queue's consumers taking jobs, for every instance sharing the backend:
	// DequeueBatch delivers nothing while it lasts and StartJob puts a job with a record back.
	// Enqueue still works. Resume ends it; Paused tells. Errors: EINVALID, EUNAVAILABLE.
	Pause(ctx context.Context, queue string) error
	// Resume ends a Pause. Errors: EINVALID, EUNAVAILABLE.
	Resume(ctx context.Context, queue string) error
	// Paused tells whether queue is paused. Errors: EINVALID, EUNAVAILABLE.
	Paused(ctx context.Context, queue string) (bool, error)
}

// JobStart is the verdict of Broker.StartJob.
type JobStart int

// The verdicts of Broker.StartJob.
const (
	// JobRun: the job is active; run the handler.
	JobRun JobStart = iota
	// JobCancelled: the job was cancelled and is no longer in flight; do not run it.
	JobCancelled
	// JobPaused: the queue is paused; the job is back at the head of pending.
	JobPaused
)

// PausePoll is how often a DequeueBatch on a paused queue checks whether it was resumed.
const PausePoll = 100 * time.Millisecond

// DedupWindow is how long an Enqueue of a job id makes later Enqueues of that job id on the
// same queue copies that append nothing (Broker.Enqueue). The Redis backend keeps its markers
// at least this long, and longer when its client may re-send a command later than that
// (internal/resend.Window).
const DedupWindow = 30 * time.Second

// MaxListCount is the largest page DeadLetters returns.
const MaxListCount = 1000

// MaxInFlightListed bounds what one InFlight call returns.
const MaxInFlightListed = 1000

// Delivery is one job handed to one consumer by Dequeue.
type Delivery struct {
	// Queue is the queue the job was taken from.
	Queue string
	// ConsumerID is the consumer whose in-flight set holds the job.
	ConsumerID string
	// Raw is the exact stored string. It identifies the in-flight entry (legacy messages carry
	// no JobID), so it must not be modified.
	Raw string
	// Message is Raw decoded; the zero Message when DecodeErr is set.
	Message Message
	// DecodeErr is non-nil when Raw is not a valid Message. The Worker logs such a delivery at
	// Error level and dead-letters it with the reason (MalformedDeadLetter).
	DecodeErr error
	// Result is what Ack stores in the job's record (a job with a record only): the handler's
	// SetResult value, set by the Worker before it acks.
	Result json.RawMessage
	// Cancelled makes Ack finish a job with a record as cancelled instead of done (its handler
	// was stopped by CancelJob).
	Cancelled bool
}

// NewDelivery returns the Delivery of raw taken from queue by consumerID, decoding raw.
// Backends use it so that every backend decodes alike.
func NewDelivery(queue, consumerID, raw string) *Delivery {
	d := &Delivery{Queue: queue, ConsumerID: consumerID, Raw: raw}
	m, err := DecodeMessage([]byte(raw))
	if err != nil {
		d.DecodeErr = err
	} else {
		d.Message = m
	}
	return d
}

// Stats are the sizes of one queue's places.
type Stats struct {
	// Pending jobs wait on the pending list.
	Pending int64 `json:"pending"`
	// Running jobs are in-flight at some consumer (including consumers whose lease expired but
	// whose jobs RecoverExpired has not moved yet).
	Running int64 `json:"running"`
	// Retrying jobs wait in the retry schedule for their due time.
	Retrying int64 `json:"retrying"`
	// Scheduled jobs (EnqueueJob with a delay) wait in the scheduled set for their time.
	Scheduled int64 `json:"scheduled"`
	// Dead jobs are on the dead-letter list.
	Dead int64 `json:"dead"`
}

// DeadLetter is one entry of a dead-letter list.
type DeadLetter struct {
	// Raw is the exact stored string; pass it to RequeueDead.
	Raw string `json:"raw"`
	// Message is Raw decoded, nil if Raw is not a valid Message.
	Message *Message `json:"message,omitempty"`
}

// NewDeadLetter returns the DeadLetter of raw, decoding it.
func NewDeadLetter(raw string) DeadLetter {
	dl := DeadLetter{Raw: raw}
	if m, err := DecodeMessage([]byte(raw)); err == nil {
		dl.Message = &m
	}
	return dl
}

// CheckReleaseBatch checks the argument of Broker.Release: every delivery non-nil with a
// non-empty Raw, valid names, and one queue and consumer for all. Backends use it so that
// every backend validates alike. Errors: EINVALID.
func CheckReleaseBatch(ds []*Delivery) error {
	for _, d := range ds {
		if d == nil || d.Raw == "" {
			return redstate.Errorf(redstate.EINVALID, "nil or empty delivery")
		}
		if d.Queue != ds[0].Queue || d.ConsumerID != ds[0].ConsumerID {
			return redstate.Errorf(redstate.EINVALID, "release: deliveries of more than one queue or consumer")
		}
	}
	if len(ds) > 0 {
		return ValidateNames(ds[0].Queue, ds[0].ConsumerID)
	}
	return nil
}

// ValidateNames checks a queue name and a consumer id (ValidateQueueName, ValidateConsumerID).
// Errors: EINVALID.
func ValidateNames(queue, consumerID string) error {
	if err := ValidateQueueName(queue); err != nil {
		return err
	}
	return ValidateConsumerID(consumerID)
}

// CheckDequeueArgs checks the arguments of Broker.DequeueBatch (and Dequeue): valid names,
// timeout > 0, maxJobs >= 1, and a ctx that has not ended (its error is returned as is).
// Backends use it so that every backend validates alike. Errors: EINVALID or ctx.Err().
func CheckDequeueArgs(ctx context.Context, queue, consumerID string, maxJobs int, timeout time.Duration) error {
	if err := ValidateNames(queue, consumerID); err != nil {
		return err
	}
	if timeout <= 0 {
		return redstate.Errorf(redstate.EINVALID, "dequeue timeout must be > 0")
	}
	if maxJobs < 1 {
		return redstate.Errorf(redstate.EINVALID, "dequeue max must be >= 1")
	}
	return ctx.Err()
}

// DequeueOne implements Broker.Dequeue on top of b.DequeueBatch with max 1.
func DequeueOne(ctx context.Context, b Broker, queue, consumerID string, timeout time.Duration) (*Delivery, error) {
	ds, err := b.DequeueBatch(ctx, queue, consumerID, 1, timeout)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	return ds[0], nil
}

// CheckDelivery validates a delivery a consumer passes back (Ack, Retry, Bury): non-nil, with
// its stored string and valid names. Errors: EINVALID.
func CheckDelivery(d *Delivery) error {
	if d == nil || d.Raw == "" {
		return redstate.Errorf(redstate.EINVALID, "nil or empty delivery")
	}
	return ValidateNames(d.Queue, d.ConsumerID)
}

// WaitPaused waits PausePoll, or less if end comes first, between two dequeue attempts on a
// paused queue. It returns false when ctx ended.
func WaitPaused(ctx context.Context, end time.Time) bool {
	return ctxsleep.Sleep(ctx, min(PausePoll, max(time.Until(end), 0)))
}
