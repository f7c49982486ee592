package report_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

// TestWebhookBody_SeedJob: a report queue's webhook body is the legacy application's job with its
// record id, member for member, for a legacy message (null payload) and a current one.
func TestWebhookBody_SeedJob(t *testing.T) {
	bodies := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
	}))
	defer srv.Close()
	h := queue.WebhookHandler(srv.URL, "", time.Second, nil, report.WebhookBody)

	legacy := `{"RecordId":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`
	if err := h(context.Background(), queue.NewDelivery("report:queue", "c1", legacy)); err != nil {
		t.Fatal(err)
	}
	want := `{"queue":"report:queue","recordId":12345,"retryCount":0,"enqueueTime":"2025-01-15T10:30:00Z","payload":null,"raw":` + quote(legacy) + `}`
	if got := <-bodies; got != want {
		t.Fatalf("legacy body\n got %s\nwant %s", got, want)
	}

	m := report.NewJob(42, time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC), json.RawMessage(`{"a":1}`))
	m.RetryCount, m.JobID = 2, "j1"
	raw, err := queue.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := h(context.Background(), queue.NewDelivery("report:queue", "c1", string(raw))); err != nil {
		t.Fatal(err)
	}
	want = `{"queue":"report:queue","recordId":42,"retryCount":2,"enqueueTime":"2025-01-15T10:30:00Z","payload":{"a":1},"raw":` + quote(string(raw)) + `}`
	if got := <-bodies; got != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
