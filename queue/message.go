package queue

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redstate/redstate"
)

// messageTimeLayout is the seed's EnqueueTime format ("2025-01-15T10:30:00"), zone-less, in
// UTC; fractional seconds are written only when present.
const messageTimeLayout = "2006-01-02T15:04:05.999999999"

// Message is one job as stored on a queue: the seed's ReportQueueMessage, with two optional
// additions. A legacy producer's message {"RecordId":12345,"RetryCount":0,
// "EnqueueTime":"2025-01-15T10:30:00"} is a valid Message with no Payload and no JobID.
type Message struct {
	// RecordID is the business record id (JSON "RecordId"), > 0.
	RecordID int64 `json:"RecordId"`
	// RetryCount is how many times the job has been retried (0 for a new job).
	RetryCount int `json:"RetryCount"`
	// EnqueueTime is when the job was first enqueued; retries keep it. Encoded zone-less in
	// UTC ("2025-01-15T10:30:00"); decoding also accepts fractional seconds and RFC 3339.
	EnqueueTime time.Time `json:"EnqueueTime"`
	// Payload is optional job input (JSON), omitted when empty.
	Payload json.RawMessage `json:"Payload,omitempty"`
	// JobID optionally identifies the job (JSON "JobId"); NewMessage sets a random one so that
	// equal jobs never collide. Omitted when empty.
	JobID string `json:"JobId,omitempty"`
	// LastError is the reason of the job's last failure (JSON "LastError"), set by the Worker
	// on a dead letter; omitted when empty.
	LastError string `json:"LastError,omitempty"`
	// FailedAt is when the job last failed (JSON "FailedAt", zone-less UTC like EnqueueTime),
	// set by the Worker on a dead letter; the zero time is omitted.
	FailedAt time.Time `json:"FailedAt,omitzero"`
}

// NewMessage returns a new job for recordID with RetryCount 0, EnqueueTime now (UTC, whole
// seconds, the seed's precision), the given payload (may be nil) and a random JobID.
func NewMessage(recordID int64, now time.Time, payload json.RawMessage) Message {
	return Message{
		RecordID:    recordID,
		EnqueueTime: now.UTC().Truncate(time.Second),
		Payload:     payload,
		JobID:       NewJobID(),
	}
}

// NewJobID returns a random 128-bit job id in hex.
func NewJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// NextRetry returns the message a failed job is retried with: RetryCount+1, everything else
// (RecordID, EnqueueTime, Payload, JobID) unchanged.
func (m Message) NextRetry() Message {
	m.RetryCount++
	return m
}

// Validate checks the fields a Broker requires: RecordID > 0, RetryCount >= 0, Payload valid
// JSON when present. Errors: EINVALID.
func (m Message) Validate() error {
	switch {
	case m.RecordID <= 0:
		return redstate.Errorf(redstate.EINVALID, "RecordId must be > 0, got %d", m.RecordID)
	case m.RetryCount < 0:
		return redstate.Errorf(redstate.EINVALID, "RetryCount must be >= 0, got %d", m.RetryCount)
	case len(m.Payload) > 0 && !json.Valid(m.Payload):
		return redstate.Errorf(redstate.EINVALID, "Payload is not valid JSON")
	}
	return nil
}

// wireMessage is Message's JSON form.
type wireMessage struct {
	RecordID    int64           `json:"RecordId"`
	RetryCount  int             `json:"RetryCount"`
	EnqueueTime string          `json:"EnqueueTime"`
	Payload     json.RawMessage `json:"Payload,omitempty"`
	JobID       string          `json:"JobId,omitempty"`
	LastError   string          `json:"LastError,omitempty"`
	FailedAt    string          `json:"FailedAt,omitempty"`
}

// MarshalJSON writes the seed's format, EnqueueTime zone-less in UTC.
func (m Message) MarshalJSON() ([]byte, error) {
	w := wireMessage{
		RecordID:    m.RecordID,
		RetryCount:  m.RetryCount,
		EnqueueTime: m.EnqueueTime.UTC().Format(messageTimeLayout),
		JobID:       m.JobID,
		LastError:   m.LastError,
	}
	if !m.FailedAt.IsZero() {
		w.FailedAt = m.FailedAt.UTC().Format(messageTimeLayout)
	}
	if len(m.Payload) > 0 {
		w.Payload = m.Payload
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the seed's format. EnqueueTime may be zone-less (read as UTC), with or
// without fractional seconds, or RFC 3339 with an offset (converted to UTC).
func (m *Message) UnmarshalJSON(b []byte) error {
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t, err := parseMessageTime(w.EnqueueTime)
	if err != nil {
		return err
	}
	failed, err := parseMessageTime(w.FailedAt)
	if err != nil {
		return err
	}
	*m = Message{RecordID: w.RecordID, RetryCount: w.RetryCount, EnqueueTime: t, JobID: w.JobID,
		LastError: w.LastError, FailedAt: failed}
	if len(w.Payload) > 0 && !bytes.Equal(w.Payload, []byte("null")) {
		m.Payload = w.Payload
	}
	return nil
}

// parseMessageTime parses an EnqueueTime; the empty string is the zero time.
func parseMessageTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(messageTimeLayout, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("EnqueueTime %q is not an ISO-8601 date-time (want e.g. 2025-01-15T10:30:00)", s)
}

// EncodeMessage returns the JSON a Broker stores for m. Errors: EINVALID (m.Validate).
func EncodeMessage(m Message) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "encode message")
	}
	return b, nil
}

// DecodeMessage parses a stored message, legacy or current. It fails (EINVALID) on malformed
// JSON, a bad EnqueueTime, RecordId <= 0 or RetryCount < 0; the Worker logs such a message and
// drops it.
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, redstate.Wrap(redstate.EINVALID, err, "malformed queue message")
	}
	if err := m.Validate(); err != nil {
		return Message{}, fmt.Errorf("malformed queue message: %w", err)
	}
	return m, nil
}
