package queue

import (
	"encoding/json"
	"time"
)

// MalformedDeadLetter returns the dead letter of a delivery that is not one of its queue's jobs
// (Delivery.DecodeErr, or rejected by WorkerSettings.Check), reason being why: LastError is
// the reason (at most 2 KiB) and FailedAt now. A message that decoded is kept as it is,
// members and all. One that did not keeps its exact text in Payload — verbatim when the text
// is JSON (an array, a number, an object with a bad EnqueueTime), else as a JSON string — in
// a new envelope (EnqueueTime now, a new JobID): so the dead letter shows what was sent, and a
// requeue makes it a job whose payload is that text.
func MalformedDeadLetter(d *Delivery, reason error, now time.Time) Message {
	now = now.UTC().Truncate(time.Second)
	var m Message
	if d.DecodeErr == nil {
		m = d.Message
	} else {
		m = NewMessage(now, json.RawMessage(d.Raw))
		if !json.Valid(m.Payload) {
			m.Payload, _ = json.Marshal(d.Raw) // a string always marshals
		}
	}
	m.LastError, m.FailedAt = truncateReason(reason.Error()), now
	return m
}
