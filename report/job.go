package report

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// DefaultQueue is the legacy application's report queue: pending list "report:queue", dead letters
// "report:queue:dead".
const DefaultQueue = "report:queue"

// RecordIDField is the top-level member of a report job that names its record: the legacy
// application's ReportQueueMessage.RecordId.
const RecordIDField = "RecordId"

// NewJob returns a new report job for record id: a queue.Message whose RecordId member is id, with
// RetryCount 0, EnqueueTime now (whole seconds, the legacy application's precision), the given
// payload (may be nil) and a random JobID. Encoded it is the legacy application's message,
// {"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","JobId":"…"}.
func NewJob(id int64, now time.Time, payload json.RawMessage) queue.Message {
	m := queue.NewMessage(now, payload)
	m.Fields = map[string]json.RawMessage{RecordIDField: json.RawMessage(strconv.FormatInt(id, 10))}
	return m
}

// RecordIDOf returns the record id of a report job: its RecordId member, an integer > 0.
// Errors: EINVALID (missing, not an integer, or <= 0).
func RecordIDOf(m queue.Message) (int64, error) {
	raw, ok := m.Field(RecordIDField)
	if !ok {
		return 0, redstate.Errorf(redstate.EINVALID, "report job without RecordId")
	}
	var id int64
	if err := json.Unmarshal(raw, &id); err != nil {
		return 0, redstate.Wrap(redstate.EINVALID, err, fmt.Sprintf("report job RecordId %s is not an integer", raw))
	}
	if id <= 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "RecordId must be > 0, got %d", id)
	}
	return id, nil
}

// CheckJob is the report queue's queue.WorkerSettings.Check: a message without a valid RecordId
// is malformed, so the Worker dead-letters it with the reason and touches no record. (The
// legacy application logged and dropped such a message, 消息反序列化失败 … 丢弃该消息; a dead
// letter keeps it for an operator.)
func CheckJob(m queue.Message) error {
	_, err := RecordIDOf(m)
	return err
}

// IsJobFor returns the queue.Broker.HasJob predicate matching the jobs of record id.
func IsJobFor(id int64) func(queue.Message) bool {
	return func(m queue.Message) bool {
		got, err := RecordIDOf(m)
		return err == nil && got == id
	}
}
