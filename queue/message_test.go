package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

func TestMessage_DecodesLegacyAndVariants(t *testing.T) {
	want := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		raw  string
		want time.Time
	}{
		{`{"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`, want},
		{`{"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00.1234567"}`, want.Add(123456700)},
		{`{"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T18:30:00+08:00"}`, want},
		{`{"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00Z"}`, want},
	} {
		m, err := queue.DecodeMessage([]byte(tc.raw))
		if err != nil || m.RecordID != 12345 || !m.EnqueueTime.Equal(tc.want) || m.JobID != "" || m.Payload != nil {
			t.Errorf("DecodeMessage(%s) = %+v, %v", tc.raw, m, err)
		}
	}
}

func TestMessage_EncodesSeedFormat(t *testing.T) {
	m := queue.Message{RecordID: 12345, EnqueueTime: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)}
	b, err := queue.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}` {
		t.Fatalf("encoded %s", got)
	}
	m.JobID, m.Payload = "j1", []byte(`{"a":1}`)
	b, _ = queue.EncodeMessage(m)
	if !strings.Contains(string(b), `"Payload":{"a":1}`) || !strings.Contains(string(b), `"JobId":"j1"`) {
		t.Fatalf("encoded %s", b)
	}
}

func TestMessage_MalformedIsInvalid(t *testing.T) {
	for _, raw := range []string{
		`{not json`, `{"RecordId":"x"}`, `{"RecordId":0,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`,
		`{"RecordId":1,"RetryCount":-1}`, `{"RecordId":1,"EnqueueTime":"yesterday"}`,
	} {
		if _, err := queue.DecodeMessage([]byte(raw)); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("DecodeMessage(%s) err = %v, want EINVALID", raw, err)
		}
	}
}

func TestMessage_NextRetryKeepsIdentity(t *testing.T) {
	m := queue.NewMessage(9, time.Now(), nil)
	n := m.NextRetry()
	if n.RetryCount != 1 || n.RecordID != 9 || !n.EnqueueTime.Equal(m.EnqueueTime) || n.JobID != m.JobID {
		t.Fatalf("NextRetry = %+v from %+v", n, m)
	}
}

func TestKeys_SeedNamesAndClusterTag(t *testing.T) {
	k := queue.NewKeys(queue.DefaultQueue, false)
	if k.Pending != "report:queue" || k.Dead != "report:queue:dead" || k.Processing("c1") != "report:queue:processing:c1" {
		t.Fatalf("standalone keys = %+v", k)
	}
	k = queue.NewKeys(queue.DefaultQueue, true)
	if k.Pending != "{report:queue}" || k.Dead != "{report:queue}:dead" || k.Retry != "{report:queue}:retry" {
		t.Fatalf("cluster keys = %+v", k)
	}
	for _, bad := range []string{"", "a{b}", "a b", strings.Repeat("x", 201)} {
		if err := queue.ValidateQueueName(bad); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("ValidateQueueName(%q) = %v", bad, err)
		}
	}
}
