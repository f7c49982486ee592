package queueblock

import (
	"context"
	"time"

	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/queue"
)

// historyObserver records the workers' outcomes in the statistics history: queue.done (acked),
// queue.failed (retried, dead-lettered, malformed) and queue.latency (of the jobs done).
type historyObserver struct{ rec *history.Recorder }

// ObserveJob implements queue.Observer.
func (h historyObserver) ObserveJob(name, outcome string, _ time.Duration) {
	switch outcome {
	case queue.OutcomeAcked:
		h.rec.Add(history.QueueDone, 1, name)
	case queue.OutcomeRetried, queue.OutcomeDead, queue.OutcomeMalformed:
		h.rec.Add(history.QueueFailed, 1, name)
	}
}

// ObserveLatency implements queue.LatencyObserver.
func (h historyObserver) ObserveLatency(name string, latency time.Duration) {
	h.rec.Observe(history.QueueLatency, latency.Seconds(), name)
}

// countingBroker is the block's broker with every job it enqueues counted in the statistics
// history (queue.enqueued): Enqueue and EnqueueRaw that succeed, EnqueueJob that creates a job.
// Jobs a producer outside redstate pushes straight to Redis are not counted. Everything else
// is the broker's.
type countingBroker struct {
	queue.Broker
	history *history.Recorder
}

// Enqueue implements queue.Broker.
func (b countingBroker) Enqueue(ctx context.Context, name string, msg queue.Message) error {
	err := b.Broker.Enqueue(ctx, name, msg)
	if err == nil {
		b.history.Add(history.QueueEnqueued, 1, name)
	}
	return err
}

// EnqueueRaw implements queue.Broker.
func (b countingBroker) EnqueueRaw(ctx context.Context, name, raw string) error {
	err := b.Broker.EnqueueRaw(ctx, name, raw)
	if err == nil {
		b.history.Add(history.QueueEnqueued, 1, name)
	}
	return err
}

// EnqueueJob implements queue.JobBroker.
func (b countingBroker) EnqueueJob(ctx context.Context, name string, req queue.JobRequest) (queue.Job, bool, error) {
	job, created, err := b.Broker.EnqueueJob(ctx, name, req)
	if err == nil && created {
		b.history.Add(history.QueueEnqueued, 1, name)
	}
	return job, created, err
}

// maxSizeSamples bounds the queues whose sizes one flush reads (one Stats call each): with
// more queues, each is read every len(queues)/maxSizeSamples flushes, round robin.
const maxSizeSamples = 100

// sampleSizes is the block's history sampler: it sets queue.size of up to maxSizeSamples
// queues from their shared counts (every instance reads the same figures, so the history's
// last-write-wins keeps them true). A queue whose counts cannot be read is skipped.
func (qb *Block) sampleSizes(ctx context.Context, rec *history.Recorder) {
	names := qb.Names()
	if len(names) == 0 {
		return
	}
	n := min(len(names), maxSizeSamples)
	for i := range n {
		name := names[(qb.sampled+i)%len(names)]
		st, err := qb.admins[name].Stats(ctx)
		if err != nil {
			continue
		}
		for _, p := range []struct {
			state string
			n     int64
		}{{"pending", st.Pending}, {"scheduled", st.Scheduled}, {"active", st.Running}, {"retrying", st.Retrying}, {"dead", st.Dead}} {
			rec.Set(history.QueueSize, float64(p.n), name, p.state)
		}
	}
	qb.sampled = (qb.sampled + n) % len(names)
}
