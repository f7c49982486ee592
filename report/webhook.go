package report

import (
	"encoding/json"
	"time"

	"github.com/redstate/redstate/queue"
)

// WebhookJob is the JSON body a report queue's webhook handler POSTs for each job (in place of
// the queue's default, the payload alone), so that report webhook receivers get the job with
// its record id.
type WebhookJob struct {
	// Queue is the queue the job was taken from.
	Queue string `json:"queue"`
	// RecordID is the job's record id (the legacy application's RecordId).
	RecordID int64 `json:"recordId"`
	// RetryCount is how many times the job has been retried (0 on the first attempt).
	RetryCount int `json:"retryCount"`
	// EnqueueTime is when the job was first enqueued (RFC 3339, UTC).
	EnqueueTime time.Time `json:"enqueueTime"`
	// Payload is the job's optional payload (null when absent).
	Payload json.RawMessage `json:"payload"`
	// Raw is the exact stored message.
	Raw string `json:"raw"`
}

// WebhookBody is the queue.WebhookBody of the report queue: the job as a WebhookJob. A job
// without a valid RecordId has record id 0 (the report queue's worker dead-letters such jobs
// before any handler runs: CheckJob).
func WebhookBody(job *queue.Delivery) ([]byte, error) {
	m := job.Message
	id, _ := RecordIDOf(m)
	payload := m.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	return json.Marshal(WebhookJob{
		Queue:       job.Queue,
		RecordID:    id,
		RetryCount:  m.RetryCount,
		EnqueueTime: m.EnqueueTime.UTC(),
		Payload:     payload,
		Raw:         job.Raw,
	})
}
