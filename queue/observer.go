package queue

import "time"

// Observer receives the outcome of every job a Worker handles, for metrics. The metrics
// package can implement it; this package does not depend on Prometheus. Implementations must
// be safe for concurrent use and fast (they run on the worker's goroutines).
type Observer interface {
	// ObserveJob counts one handled delivery of queue: its outcome (an Outcome constant) and
	// how long the handler ran (0 for OutcomeMalformed and OutcomeLost).
	ObserveJob(queue, outcome string, d time.Duration)
}

// LatencyObserver is an Observer that also wants the latency of every job done: a Worker whose
// Observer implements it calls ObserveLatency after ObserveJob(..., OutcomeAcked, ...).
type LatencyObserver interface {
	// ObserveLatency reports a job of queue done (acked) latency after its message's
	// EnqueueTime (the first enqueue: retries' waits count), and never less than its handler's
	// run time. EnqueueTime has whole seconds (NewMessage), so a latency under a second reads
	// up to a second high.
	ObserveLatency(queue string, latency time.Duration)
}

// Job outcomes told to an Observer.
const (
	// OutcomeAcked: the handler succeeded and the job was acked.
	OutcomeAcked = "acked"
	// OutcomeRetried: the handler failed and the job was scheduled for a retry.
	OutcomeRetried = "retried"
	// OutcomeDead: the handler failed after the last retry; the job was dead-lettered.
	OutcomeDead = "dead"
	// OutcomeMalformed: the message was malformed (not a JSON object, a bad envelope member,
	// or rejected by WorkerSettings.Check) and was dead-lettered with the reason, no handler
	// run.
	OutcomeMalformed = "malformed"
	// OutcomeCancelled: a job with a record was cancelled (CancelJob) before or while it ran.
	OutcomeCancelled = "cancelled"
	// OutcomeLost: the job could not be settled (acked, retried or buried) because its lease
	// had expired and it was recovered; it will be (or was) delivered again.
	OutcomeLost = "lost"
)
