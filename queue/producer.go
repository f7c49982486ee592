package queue

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

// Producer enqueues new jobs: the seed's ReportQueueProducer.
type Producer struct {
	b     Broker
	queue string
	now   func() time.Time
}

// NewProducer returns a Producer for queue ("" for DefaultQueue) using the real clock.
func NewProducer(b Broker, queue string) *Producer {
	if queue == "" {
		queue = DefaultQueue
	}
	return &Producer{b: b, queue: queue, now: time.Now}
}

// Enqueue enqueues a new job for recordID (RetryCount 0, EnqueueTime now, a fresh JobID) in one
// round trip and returns it. Errors: EINVALID (recordID <= 0, bad payload), EUNAVAILABLE.
func (p *Producer) Enqueue(ctx context.Context, recordID int64, payload json.RawMessage) (Message, error) {
	m := NewMessage(recordID, p.now(), payload)
	return m, p.b.Enqueue(ctx, p.queue, m)
}

// Submit is the seed's SubmitAnswersAsync: it stores the answers with status 3 (生成中), then
// enqueues the job. An enqueue failure is logged and does not fail the submission (the record
// stays in status 3 and the Reconciler enqueues it later), as the seed requires.
// Errors: those of RecordStore.Submit.
func (p *Producer) Submit(ctx context.Context, records RecordStore, id int64, answers json.RawMessage, log *slog.Logger) (*Record, error) {
	rec, err := records.Submit(ctx, id, answers)
	if err != nil {
		return nil, err
	}
	if _, err := p.Enqueue(ctx, id, nil); err != nil {
		if log == nil {
			log = slog.Default()
		}
		log.Error("queue: enqueue after submit failed; record stays 生成中 for the reconciler", "recordId", id, "err", err)
	}
	return rec, nil
}
