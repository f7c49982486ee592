// Package queue is redstate's job queue block: named queues of jobs with an opaque JSON
// payload, delivered at least once to blocking consumers, with leases (a crashed consumer's
// jobs are redelivered), prefetch, retries on a schedule (10 s, 30 s, 60 s by default), a
// dead-letter list, requeue and per-minute throughput counts. It knows nothing of what its
// jobs mean: the report flow (package report) and the feed's fan-out are built on it.
//
// A Producer enqueues a Message (the envelope RetryCount, EnqueueTime, Payload, JobId); a
// Worker consumes one queue (NewWorker), or several with weighted or strict priorities between
// them and one budget of handlers (NewPool), runs a Handler per job (nil acks it, an error
// retries it, Permanent dead-letters it at once) and settles the job; Admin reads a queue's
// Stats and manages its dead letters; WebhookHandler is a Handler that POSTs each job to a URL. All of
// them work on a Broker, the storage contract with two backends of the same semantics:
// queue/redisqueue (Redis standalone, Sentinel or Cluster, one Lua script per step) and
// queue/memqueue (in memory); queue/queuetest is the conformance suite both pass. The Example
// runs a worker on Redis through a go-redis client; docs/queue.md states the delivery
// guarantee.
package queue
