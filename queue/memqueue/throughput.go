package memqueue

import (
	"context"

	"github.com/redstate/redstate/queue"
)

var _ queue.ThroughputStore = (*Broker)(nil)

// AddThroughput implements queue.ThroughputStore: AddThroughputBatch with a batch id of its
// own.
func (b *Broker) AddThroughput(ctx context.Context, name string, minute int64, counts map[string]int64) error {
	return b.AddThroughputBatch(ctx, name, minute, queue.NewJobID(), counts)
}

// AddThroughputBatch implements queue.ThroughputStore. Minutes older than queue.ThroughputTTL
// before the newest one added are dropped.
func (b *Broker) AddThroughputBatch(_ context.Context, name string, minute int64, batch string, counts map[string]int64) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if err := queue.ValidateBatchID(batch); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.q(name).batches.mark(batch, b.now()) {
		return nil
	}
	if b.throughput == nil {
		b.throughput = map[string]map[int64]map[string]int64{}
	}
	q := b.throughput[name]
	if q == nil {
		q = map[int64]map[string]int64{}
		b.throughput[name] = q
	}
	if q[minute] == nil {
		q[minute] = map[string]int64{}
	}
	for outcome, n := range counts {
		q[minute][outcome] += n
	}
	keep := int64(queue.ThroughputTTL.Minutes())
	for m := range q {
		if m < minute-keep {
			delete(q, m)
		}
	}
	return nil
}

// Throughput implements queue.ThroughputStore.
func (b *Broker) Throughput(_ context.Context, name string, from, to int64) (map[int64]map[string]int64, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	if err := queue.ValidateThroughputRange(from, to); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[int64]map[string]int64{}
	for m, counts := range b.throughput[name] {
		if m < from || m > to {
			continue
		}
		c := make(map[string]int64, len(counts))
		for k, v := range counts {
			c[k] = v
		}
		out[m] = c
	}
	return out, nil
}
