// Package periodic enqueues jobs from cron expressions, once per tick across all instances.
//
// Every instance runs the same Scheduler; one at a time leads, holding the scheduler's fenced
// lease (internal/lease Leader), and only the leader fires ticks. Firing a tick is three steps:
// Begin records the tick as claimed in the tick store (fenced: a leader whose lease was taken
// over is refused once its successor wrote), the job is enqueued under the tick's own job id
// (TickID, "cron:<name>:<tick unix seconds>"), and Finish records the tick as done. A leader
// that takes over re-fires a tick its predecessor claimed but did not finish, under the same
// id, so the Enqueuer recognises the repeat and the tick is still one job. See docs/queue.md,
// "Periodic jobs", for the guarantee and its limits.
package periodic
