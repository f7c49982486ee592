package queue

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redstate/redstate"
)

// messageTimeLayout is the EnqueueTime format ("2025-01-15T10:30:00"), zone-less, in UTC;
// fractional seconds are written only when present.
const messageTimeLayout = "2006-01-02T15:04:05.999999999"

// Message is one job as stored on a queue: a JSON object with the envelope members RetryCount,
// EnqueueTime and the optional Payload, JobId, LastError and FailedAt. Any other top-level
// member a producer wrote is kept verbatim in Fields, so that a queue's user may put its own
// members beside the envelope (a job that is retried or dead-lettered keeps them): the queue
// never interprets them. {"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"} is the
// smallest valid Message.
type Message struct {
	// RetryCount is how many times the job has been retried (0 for a new job).
	RetryCount int `json:"RetryCount"`
	// EnqueueTime is when the job was first enqueued; retries keep it. Encoded zone-less in
	// UTC ("2025-01-15T10:30:00"); decoding also accepts fractional seconds and RFC 3339.
	EnqueueTime time.Time `json:"EnqueueTime"`
	// Payload is the job's optional input (opaque JSON), omitted when empty.
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
	// Job is set on a job enqueued with a record (Broker.EnqueueJob): its per-job options (JSON
	// "Job", written first). nil for every other message, which then behaves as before job
	// records existed.
	Job *JobSpec `json:"Job,omitempty"`
	// Fields are the object's other top-level members (name → JSON value), kept verbatim and
	// encoded before the envelope members, in name order. nil when there are none.
	Fields map[string]json.RawMessage `json:"-"`
}

// NewMessage returns a new job with RetryCount 0, EnqueueTime now (UTC, whole seconds), the
// given payload (may be nil) and a random JobID.
func NewMessage(now time.Time, payload json.RawMessage) Message {
	return Message{
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
// (EnqueueTime, Payload, JobID, Fields) unchanged.
func (m Message) NextRetry() Message {
	m.RetryCount++
	return m
}

// Field returns the value of the top-level member name among Fields, matched like
// encoding/json matches struct fields (exact name first, then case-insensitively), and
// whether there is one.
func (m Message) Field(name string) (json.RawMessage, bool) {
	if v, ok := m.Fields[name]; ok {
		return v, true
	}
	for k, v := range m.Fields {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// Validate checks the fields a Broker requires: RetryCount >= 0, Payload and Fields valid
// JSON, no Field named like an envelope member, a valid JobID when Job is set. Errors: EINVALID.
func (m Message) Validate() error {
	switch {
	case m.RetryCount < 0:
		return redstate.Errorf(redstate.EINVALID, "RetryCount must be >= 0, got %d", m.RetryCount)
	case len(m.Payload) > 0 && !json.Valid(m.Payload):
		return redstate.Errorf(redstate.EINVALID, "Payload is not valid JSON")
	case m.Job != nil && ValidateJobID(m.JobID) != nil:
		return redstate.Errorf(redstate.EINVALID, "a job with a record needs a valid JobId: %v", ValidateJobID(m.JobID))
	}
	for k, v := range m.Fields {
		if isEnvelopeMember(k) {
			return redstate.Errorf(redstate.EINVALID, "field %q is an envelope member", k)
		}
		if !json.Valid(v) {
			return redstate.Errorf(redstate.EINVALID, "field %q is not valid JSON", k)
		}
	}
	return nil
}

// envelopeMembers are the JSON names of Message's own members.
var envelopeMembers = []string{"RetryCount", "EnqueueTime", "Payload", "JobId", "LastError", "FailedAt", "Job"}

// isEnvelopeMember tells whether a top-level member name decodes into an envelope member
// (encoding/json matches names case-insensitively).
func isEnvelopeMember(name string) bool {
	return slices.ContainsFunc(envelopeMembers, func(e string) bool { return strings.EqualFold(e, name) })
}

// wireMessage is the envelope's JSON form.
type wireMessage struct {
	RetryCount  int             `json:"RetryCount"`
	EnqueueTime string          `json:"EnqueueTime"`
	Payload     json.RawMessage `json:"Payload,omitempty"`
	JobID       string          `json:"JobId,omitempty"`
	LastError   string          `json:"LastError,omitempty"`
	FailedAt    string          `json:"FailedAt,omitempty"`
	Job         *JobSpec        `json:"Job,omitempty"`
}

// MarshalJSON writes Job (when set, first: RecordPrefix), then Fields (in name order), then the
// envelope, EnqueueTime zone-less in UTC.
func (m Message) MarshalJSON() ([]byte, error) {
	w := wireMessage{
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
	env, err := json.Marshal(w)
	if err != nil || (len(m.Fields) == 0 && m.Job == nil) {
		return env, err
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	if m.Job != nil {
		spec, err := json.Marshal(m.Job)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`"Job":`)
		buf.Write(spec)
		buf.WriteByte(',')
	}
	for _, k := range slices.Sorted(maps.Keys(m.Fields)) {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		var v bytes.Buffer
		if err := json.Compact(&v, m.Fields[k]); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(v.Bytes())
		buf.WriteByte(',')
	}
	buf.Write(env[1:])
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a stored message. EnqueueTime may be zone-less (read as UTC), with or
// without fractional seconds, or RFC 3339 with an offset (converted to UTC). Members other
// than the envelope's go to Fields.
//
// The object is parsed once into its members (splitMembers), which is what every well-formed
// message takes; a message that does not decode that way (not an object, an envelope member
// of the wrong type or spelled in another case) is decoded again member by member as
// encoding/json decodes a struct, so that its outcome and error are exactly that decoding's.
func (m *Message) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err == nil && all != nil {
		if w, ok := envelopeOf(all); ok {
			return m.fromWire(w, all)
		}
	}
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	all = nil
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	if all == nil {
		return fmt.Errorf("a queue message is a JSON object, got %s", b)
	}
	for k := range all {
		if isEnvelopeMember(k) {
			delete(all, k)
		}
	}
	return m.fromWire(w, all)
}

// envelopeOf returns the envelope of a message's members, and false when one of them cannot be
// read without encoding/json's struct decoding: a member spelled like an envelope member in
// another case (encoding/json matches names case-insensitively, and the last of several wins),
// or an envelope member whose value is not of its type. It deletes the envelope members from
// all, leaving the message's Fields.
func envelopeOf(all map[string]json.RawMessage) (wireMessage, bool) {
	var w wireMessage
	for k, v := range all {
		var ok bool
		switch k {
		case "RetryCount":
			ok = decodeInt(v, &w.RetryCount)
		case "EnqueueTime":
			ok = decodeString(v, &w.EnqueueTime)
		case "Payload":
			w.Payload, ok = v, true
		case "JobId":
			ok = decodeString(v, &w.JobID)
		case "LastError":
			ok = decodeString(v, &w.LastError)
		case "FailedAt":
			ok = decodeString(v, &w.FailedAt)
		case "Job":
			ok = json.Unmarshal(v, &w.Job) == nil
		default:
			if isEnvelopeMember(k) {
				return wireMessage{}, false
			}
			continue
		}
		if !ok {
			return wireMessage{}, false
		}
		delete(all, k)
	}
	return w, true
}

// decodeInt reads a JSON integer (or null, which leaves *n) into n.
func decodeInt(v json.RawMessage, n *int) bool {
	if i, err := strconv.Atoi(string(v)); err == nil {
		*n = i
		return true
	}
	return json.Unmarshal(v, n) == nil
}

// decodeString reads a JSON string (or null, which leaves *s) into s. A string without escapes
// in valid UTF-8 is its bytes between the quotes (v comes from a document encoding/json has
// validated); any other goes through encoding/json.
func decodeString(v json.RawMessage, s *string) bool {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		*s = string(v[1 : len(v)-1])
		return true
	}
	return json.Unmarshal(v, s) == nil
}

// fromWire sets m from its decoded envelope w and its other members fields (kept as Fields when
// there are any).
func (m *Message) fromWire(w wireMessage, fields map[string]json.RawMessage) error {
	t, err := parseMessageTime(w.EnqueueTime)
	if err != nil {
		return err
	}
	failed, err := parseMessageTime(w.FailedAt)
	if err != nil {
		return err
	}
	*m = Message{RetryCount: w.RetryCount, EnqueueTime: t, JobID: w.JobID, LastError: w.LastError, FailedAt: failed, Job: w.Job}
	if len(w.Payload) > 0 && !bytes.Equal(w.Payload, []byte("null")) {
		m.Payload = w.Payload
	}
	if len(fields) > 0 {
		m.Fields = fields
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

// DecodeMessage parses a stored message. It fails (EINVALID) on malformed JSON (or a value
// that is not an object), a bad EnqueueTime or RetryCount < 0; the Worker dead-letters such a
// message with the reason (MalformedDeadLetter).
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if err := m.UnmarshalJSON(b); err != nil { // what json.Unmarshal(b, &m) would call, without its extra pass
		return Message{}, redstate.Wrap(redstate.EINVALID, err, "malformed queue message")
	}
	if err := m.Validate(); err != nil {
		return Message{}, fmt.Errorf("malformed queue message: %w", err)
	}
	return m, nil
}
