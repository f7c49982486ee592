package queue_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

func TestMessage_DecodesForeignAndVariants(t *testing.T) {
	want := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		raw  string
		want time.Time
	}{
		{`{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`, want},
		{`{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00.1234567"}`, want.Add(123456700)},
		{`{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T18:30:00+08:00"}`, want},
		{`{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00Z"}`, want},
	} {
		m, err := queue.DecodeMessage([]byte(tc.raw))
		if v, _ := m.Field("key"); err != nil || string(v) != "12345" || !m.EnqueueTime.Equal(tc.want) || m.JobID != "" || m.Payload != nil {
			t.Errorf("DecodeMessage(%s) = %+v, %v", tc.raw, m, err)
		}
	}
}

func TestMessage_EncodesMembersFirstThenEnvelope(t *testing.T) {
	m := queue.Message{EnqueueTime: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)}
	b, err := queue.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}` {
		t.Fatalf("encoded %s", got)
	}
	m.Fields = map[string]json.RawMessage{"b": json.RawMessage(`[1, 2]`), "Key": json.RawMessage(`12345`)}
	if b, _ = queue.EncodeMessage(m); string(b) != `{"Key":12345,"b":[1,2],"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}` {
		t.Fatalf("encoded %s", b)
	}
	m.Fields = map[string]json.RawMessage{"jobid": json.RawMessage(`"x"`)}
	if _, err := queue.EncodeMessage(m); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("a member named like the envelope's: %v", err)
	}
	m.Fields = nil
	m.JobID, m.Payload = "j1", []byte(`{"a":1}`)
	b, _ = queue.EncodeMessage(m)
	if !strings.Contains(string(b), `"Payload":{"a":1}`) || !strings.Contains(string(b), `"JobId":"j1"`) {
		t.Fatalf("encoded %s", b)
	}
}

func TestMessage_MalformedIsInvalid(t *testing.T) {
	for _, raw := range []string{
		`{not json`, `null`, `[1]`, `{"RetryCount":"x"}`,
		`{"Key":1,"RetryCount":-1}`, `{"Key":1,"EnqueueTime":"yesterday"}`,
	} {
		if _, err := queue.DecodeMessage([]byte(raw)); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("DecodeMessage(%s) err = %v, want EINVALID", raw, err)
		}
	}
}

func TestMessage_NextRetryKeepsIdentity(t *testing.T) {
	m := queue.NewMessage(time.Now(), json.RawMessage(`9`))
	m.Fields = map[string]json.RawMessage{"Key": json.RawMessage(`1`)}
	n := m.NextRetry()
	if n.RetryCount != 1 || string(n.Payload) != "9" || string(n.Fields["Key"]) != "1" || !n.EnqueueTime.Equal(m.EnqueueTime) || n.JobID != m.JobID {
		t.Fatalf("NextRetry = %+v from %+v", n, m)
	}
}

func TestKeys_NamesAndClusterTag(t *testing.T) {
	k := queue.NewKeys(redstate.Prefix("", "jobs"), false)
	if k.Pending != "jobs" || k.Dead != "jobs:dead" || k.Processing("c1") != "jobs:processing:c1" {
		t.Fatalf("standalone keys = %+v", k)
	}
	k = queue.NewKeys(redstate.Prefix("", "jobs"), true)
	if k.Pending != "{jobs}" || k.Dead != "{jobs}:dead" || k.Retry != "{jobs}:retry" {
		t.Fatalf("cluster keys = %+v", k)
	}
	for _, bad := range []string{"", "a{b}", "a b", strings.Repeat("x", 201)} {
		if err := queue.ValidateQueueName(bad); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("ValidateQueueName(%q) = %v", bad, err)
		}
	}
}
