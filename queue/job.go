package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redstate/redstate"
)

// JobOptions are the per-job options of Producer.EnqueueJob. The zero value is a job that runs
// at once with the queue's retry policy and whose record is kept DefaultRetention after it
// finishes.
type JobOptions struct {
	// ID is the caller's idempotency key (ValidateJobID): while the job's record exists, an
	// EnqueueJob of the same ID on the same queue returns that job (created false) and enqueues
	// nothing. Empty: a random id.
	ID string
	// Delay makes the job wait in the queue's scheduled set until now+Delay.
	Delay time.Duration
	// ProcessAt makes the job wait in the scheduled set until then (it wins over Delay). A time
	// not after now means at once.
	ProcessAt time.Time
	// MaxRetries overrides the worker's WorkerSettings.MaxRetries for this job (nil: the
	// worker's; 0: no retry).
	MaxRetries *int
	// RetryDelays overrides the worker's retry schedule for this job (nil: the worker's); the
	// last delay repeats. Each must be positive.
	RetryDelays []time.Duration
	// Timeout bounds one attempt: the handler's ctx gets this deadline (a webhook call gets it
	// as its request deadline). 0: none beyond the worker's.
	Timeout time.Duration
	// UniqueFor refuses, for this long after the enqueue, another job with the same ID or
	// (without an ID) the same payload: EnqueueJob returns ECONFLICT naming the existing job.
	// 0: no such lock.
	UniqueFor time.Duration
	// Retention is how long the job's record (with its result) is kept once the job finished
	// (done, dead or cancelled). 0: DefaultRetention.
	Retention time.Duration
}

// DefaultRetention is how long a finished job's record is kept when JobOptions.Retention is 0.
const DefaultRetention = 24 * time.Hour

// MaxJobIDLen bounds a caller's job id.
const MaxJobIDLen = 128

// ValidateJobID checks a job id given in JobOptions.ID: 1..128 characters from
// [A-Za-z0-9:_.-] (it becomes part of its record's key). Errors: EINVALID.
func ValidateJobID(id string) error {
	if len(id) > MaxJobIDLen {
		return redstate.Errorf(redstate.EINVALID, "job id must be 1..%d characters", MaxJobIDLen)
	}
	return validateName("job id", id)
}

// Validate checks the options. Errors: EINVALID.
func (o JobOptions) Validate() error {
	if o.ID != "" {
		if err := ValidateJobID(o.ID); err != nil {
			return err
		}
	}
	switch {
	case o.Delay < 0:
		return redstate.Errorf(redstate.EINVALID, "job delay must not be negative")
	case o.MaxRetries != nil && *o.MaxRetries < 0:
		return redstate.Errorf(redstate.EINVALID, "job maxRetries must not be negative")
	case o.Timeout < 0:
		return redstate.Errorf(redstate.EINVALID, "job timeout must not be negative")
	case o.UniqueFor < 0:
		return redstate.Errorf(redstate.EINVALID, "job uniqueFor must not be negative")
	case o.Retention < 0:
		return redstate.Errorf(redstate.EINVALID, "job retention must not be negative")
	}
	for _, d := range o.RetryDelays {
		if d <= 0 {
			return redstate.Errorf(redstate.EINVALID, "job retry delays must be positive")
		}
	}
	return nil
}

// JobSpec is what a message with a job record carries of its options (JSON member "Job", the
// first member of such a message: backends recognise a message with a record by its prefix
// `{"Job":`). Durations are whole milliseconds; zero members are omitted.
type JobSpec struct {
	// MaxRetries overrides the worker's retry count when set.
	MaxRetries *int `json:"MaxRetries,omitempty"`
	// RetryDelaysMs overrides the worker's retry schedule when non-empty.
	RetryDelaysMs []int64 `json:"RetryDelaysMs,omitempty"`
	// TimeoutMs bounds one attempt when > 0.
	TimeoutMs int64 `json:"TimeoutMs,omitempty"`
}

// RecordPrefix is how every stored message with a job record begins (EncodeMessage writes the
// "Job" member first): backends test it to find the record of a stored string without
// decoding strings that have none.
const RecordPrefix = `{"Job":`

// Timeout returns the attempt timeout of the job (0: none).
func (s *JobSpec) Timeout() time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(s.TimeoutMs) * time.Millisecond
}

// JobState is where a job with a record is in its life.
type JobState string

// The states of a job with a record.
const (
	// StateScheduled: waiting in the scheduled set for its time (Delay, ProcessAt).
	StateScheduled JobState = "scheduled"
	// StatePending: on the pending list (or dequeued by a worker that has not started it).
	StatePending JobState = "pending"
	// StateActive: a handler runs it.
	StateActive JobState = "active"
	// StateRetrying: failed, waiting in the retry schedule for its next attempt.
	StateRetrying JobState = "retrying"
	// StateDone: its handler succeeded.
	StateDone JobState = "done"
	// StateDead: on the dead-letter list (retries exhausted or a permanent failure).
	StateDead JobState = "dead"
	// StateCancelled: cancelled; it never runs (again).
	StateCancelled JobState = "cancelled"
)

// JobStates lists every state, in life order.
var JobStates = []JobState{StateScheduled, StatePending, StateActive, StateRetrying, StateDone, StateDead, StateCancelled}

// Valid tells whether s is one of JobStates.
func (s JobState) Valid() bool {
	for _, v := range JobStates {
		if s == v {
			return true
		}
	}
	return false
}

// Finished tells whether s is final (done, dead, cancelled).
func (s JobState) Finished() bool {
	return s == StateDone || s == StateDead || s == StateCancelled
}

// Attempt is one run of a job's handler.
type Attempt struct {
	// Start and End are when the handler started and returned (End zero while it runs).
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Consumer is the worker that ran it.
	Consumer string `json:"consumer,omitempty"`
	// Error is the attempt's failure ("" when it succeeded or still runs).
	Error string `json:"error,omitempty"`
}

// Job is the record of one job enqueued with EnqueueJob.
type Job struct {
	// Queue and ID name the job.
	Queue string `json:"queue"`
	ID    string `json:"id"`
	// State is where the job is.
	State JobState `json:"state"`
	// Message is the job as stored now (its payload, options and retry count).
	Message Message `json:"message"`
	// Raw is the exact stored string of the job's current place (pending, scheduled, retry or
	// dead entry, or in flight).
	Raw string `json:"-"`
	// EnqueuedAt is when it was enqueued, ProcessAt when it is (was) due, FinishedAt when it
	// finished (zero unless finished).
	EnqueuedAt time.Time `json:"enqueuedAt"`
	ProcessAt  time.Time `json:"processAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Attempts are the handler runs, oldest first.
	Attempts []Attempt `json:"attempts"`
	// Result is what the handler returned with SetResult (kept with the record), nil if none.
	Result json.RawMessage `json:"result,omitempty"`
	// CancelRequested is true once CancelJob asked a running job to stop.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// Retention is how long the record is kept once the job finished.
	Retention time.Duration `json:"-"`
}

// JobRequest is what Broker.EnqueueJob stores: the message (JobID and Job set), when it is due
// and its unique lock. Producer.EnqueueJob builds it from JobOptions.
type JobRequest struct {
	// Message is the job; its JobID is the job id and its Job is non-nil.
	Message Message
	// ProcessAt, when after the broker's now, puts the job in the scheduled set instead of the
	// pending list.
	ProcessAt time.Time
	// UniqueKey and UniqueFor: when UniqueFor > 0, no other job with the same UniqueKey may be
	// enqueued within UniqueFor (ECONFLICT naming the job holding the lock).
	UniqueKey string
	UniqueFor time.Duration
	// Retention is how long the record is kept once the job finished (> 0).
	Retention time.Duration
}

// Validate checks a request. Errors: EINVALID.
func (r JobRequest) Validate() error {
	if r.Message.Job == nil {
		return redstate.Errorf(redstate.EINVALID, "job request without job spec")
	}
	if err := ValidateJobID(r.Message.JobID); err != nil {
		return err
	}
	if r.UniqueFor < 0 || r.Retention <= 0 {
		return redstate.Errorf(redstate.EINVALID, "job request: uniqueFor >= 0 and retention > 0 required")
	}
	return r.Message.Validate()
}

// NewJobRequest builds the request of a new job carrying payload with opts, enqueued at now.
// Errors: EINVALID (opts.Validate, payload not JSON).
func NewJobRequest(now time.Time, payload json.RawMessage, opts JobOptions) (JobRequest, error) {
	if err := opts.Validate(); err != nil {
		return JobRequest{}, err
	}
	m := NewMessage(now, payload)
	if opts.ID != "" {
		m.JobID = opts.ID
	}
	spec := &JobSpec{MaxRetries: opts.MaxRetries, TimeoutMs: opts.Timeout.Milliseconds()}
	for _, d := range opts.RetryDelays {
		spec.RetryDelaysMs = append(spec.RetryDelaysMs, max(d.Milliseconds(), 1))
	}
	m.Job = spec
	r := JobRequest{Message: m, UniqueFor: opts.UniqueFor, Retention: opts.Retention}
	if r.Retention == 0 {
		r.Retention = DefaultRetention
	}
	switch {
	case !opts.ProcessAt.IsZero():
		r.ProcessAt = opts.ProcessAt
	case opts.Delay > 0:
		r.ProcessAt = now.Add(opts.Delay)
	}
	if opts.UniqueFor > 0 {
		if opts.ID != "" {
			r.UniqueKey = "id-" + opts.ID
		} else {
			sum := sha256.Sum256(payload)
			r.UniqueKey = "sha-" + hex.EncodeToString(sum[:])
		}
	}
	return r, r.Message.Validate()
}

// HasRecord tells whether a stored string is a message with a job record (RecordPrefix).
func HasRecord(raw string) bool {
	return len(raw) >= len(RecordPrefix) && raw[:len(RecordPrefix)] == RecordPrefix
}

// retryPolicy returns the job's max retries and retry delay after attempt retryCount, given
// the worker's policy.
func (s *JobSpec) retryPolicy(maxRetries int, delay func(int) time.Duration, retryCount int) (int, time.Duration) {
	if s == nil {
		return maxRetries, delay(retryCount)
	}
	if s.MaxRetries != nil {
		maxRetries = *s.MaxRetries
	}
	if n := len(s.RetryDelaysMs); n > 0 {
		return maxRetries, time.Duration(s.RetryDelaysMs[min(retryCount, n-1)]) * time.Millisecond
	}
	return maxRetries, delay(retryCount)
}

// RecordID returns the job id of a stored string with a job record, "" for any other string
// (no RecordPrefix, or not decodable).
func RecordID(raw string) string {
	if !HasRecord(raw) {
		return ""
	}
	var m struct {
		JobID string `json:"JobId"`
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		return ""
	}
	return m.JobID
}

// CheckJobsArgs checks the arguments of Broker.Jobs and returns the cursor's offset (a cursor
// is the decimal offset of the next page in the state's list). Backends use it so that every
// backend validates alike. Errors: EINVALID.
func CheckJobsArgs(queue string, state JobState, cursor string, limit int) (int, error) {
	if err := ValidateQueueName(queue); err != nil {
		return 0, err
	}
	if !state.Valid() {
		return 0, redstate.Errorf(redstate.EINVALID, "job state %q is not one of %v", state, JobStates)
	}
	if limit < 1 || limit > MaxListCount {
		return 0, redstate.Errorf(redstate.EINVALID, "limit must be 1..%d", MaxListCount)
	}
	if cursor == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(cursor)
	if err != nil || n < 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "bad jobs cursor %q", cursor)
	}
	return n, nil
}

// PrepareJob checks an EnqueueJob call (the queue's name and the request) and returns the
// message as it is stored: the start of every backend's EnqueueJob. Errors: EINVALID.
func PrepareJob(name string, req JobRequest) ([]byte, error) {
	if err := ValidateQueueName(name); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return EncodeMessage(req.Message)
}
