package queue_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/webhook"
)

func webhookDelivery(t *testing.T) *queue.Delivery {
	t.Helper()
	m := queue.Message{RetryCount: 2, EnqueueTime: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
		Payload: json.RawMessage(`{"a":1}`), JobID: "j1"}
	raw, err := queue.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return queue.NewDelivery("jobs", "c1", string(raw))
}

// TestWebhookHandler_PostsPayloadWithJobHeaders: the body is the job's payload as sent; the
// queue, job id, attempt and deadline are headers.
func TestWebhookHandler_PostsPayloadWithJobHeaders(t *testing.T) {
	var body string
	var header http.Header
	var method string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		method, body, header = r.Method, string(b), r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	d := webhookDelivery(t)
	before := time.Now()
	if err := queue.WebhookHandler(srv.URL, "", time.Minute, nil, nil)(context.Background(), d); err != nil {
		t.Fatalf("2xx: %v", err)
	}
	if method != http.MethodPost || header.Get("Content-Type") != "application/json" {
		t.Errorf("method %s, content-type %q", method, header.Get("Content-Type"))
	}
	if body != `{"a":1}` {
		t.Errorf("body = %s, want the payload", body)
	}
	if header.Get(queue.HeaderQueue) != "jobs" || header.Get(queue.HeaderJobID) != "j1" || header.Get(queue.HeaderAttempt) != "3" {
		t.Errorf("queue %q, job id %q, attempt %q; want jobs, j1, 3 (RetryCount 2)",
			header.Get(queue.HeaderQueue), header.Get(queue.HeaderJobID), header.Get(queue.HeaderAttempt))
	}
	deadline, err := time.Parse(time.RFC3339, header.Get(queue.HeaderDeadline))
	if err != nil || deadline.Before(before.Add(time.Minute).Truncate(time.Millisecond)) || deadline.After(time.Now().Add(time.Minute)) {
		t.Errorf("deadline %q (%v), want the call's timeout from its start", header.Get(queue.HeaderDeadline), err)
	}
}

// TestWebhookHandler_DeadlineIsTheHandlersWhenEarlier: a handler ctx ending before the call's
// timeout (a job's own timeout) is the deadline the receiver is told.
func TestWebhookHandler_DeadlineIsTheHandlersWhenEarlier(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(queue.HeaderDeadline)
	}))
	defer srv.Close()
	want := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), want)
	defer cancel()
	if err := queue.WebhookHandler(srv.URL, "", 24*time.Hour, nil, nil)(ctx, webhookDelivery(t)); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d != want.Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("deadline %s, want the handler's %s", d, want.Format(time.RFC3339Nano))
	}
}

func TestWebhookHandler_FailureCases(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/500":
			http.Error(w, "engine exploded", http.StatusInternalServerError)
		case "/302":
			w.WriteHeader(http.StatusNotModified)
		case "/slow":
			_, _ = io.ReadAll(r.Body) // lets the server notice the client going away
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	}))
	defer srv.Close()
	d := webhookDelivery(t)

	err := queue.WebhookHandler(srv.URL+"/500", "", time.Second, srv.Client(), nil)(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "engine exploded") {
		t.Errorf("500: %v", err)
	}
	if err := queue.WebhookHandler(srv.URL+"/302", "", time.Second, nil, nil)(context.Background(), d); err == nil || !strings.Contains(err.Error(), "304") {
		t.Errorf("304: %v", err)
	}
	start := time.Now()
	err = queue.WebhookHandler(srv.URL+"/slow", "", 50*time.Millisecond, nil, nil)(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("timeout: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("timeout took %s", time.Since(start))
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	if err := queue.WebhookHandler(url, "", time.Second, nil, nil)(context.Background(), d); err == nil {
		t.Error("connection refused: no error")
	}
}

// TestWebhookHandler_ForeignMessageBodyIsItsOwnMembers: a message without a Payload member
// (a producer outside redstate LPUSHed a plain object) is posted as the members its producer
// wrote, without the envelope, and without a job id header; a job with neither is null.
func TestWebhookHandler_ForeignMessageBodyIsItsOwnMembers(t *testing.T) {
	type call struct {
		body  string
		jobID []string
	}
	calls := make(chan call, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls <- call{string(b), r.Header.Values(queue.HeaderJobID)}
	}))
	defer srv.Close()
	h := queue.WebhookHandler(srv.URL, "", time.Second, nil, nil)
	for _, tc := range []struct{ raw, want string }{
		{`{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`, `{"Key":12345}`},
		{`{"to":"a@example.com","tags":["x"]}`, `{"tags":["x"],"to":"a@example.com"}`},
		{`{"RetryCount":1,"EnqueueTime":"2025-01-15T10:30:00"}`, `null`},
	} {
		if err := h(context.Background(), queue.NewDelivery("jobs", "c1", tc.raw)); err != nil {
			t.Fatal(err)
		}
		if c := <-calls; c.body != tc.want || c.jobID != nil {
			t.Errorf("%s: body %s, job id %v; want %s and no job id", tc.raw, c.body, c.jobID, tc.want)
		}
	}
}

func TestWebhook_CallsAreSignedAndVerifiable(t *testing.T) {
	secret := "hook-secret-0123456789"
	verified := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verified <- webhook.Verify([]byte(secret), r.Header, body, time.Now(), 0)
	}))
	defer srv.Close()
	raw, _ := queue.EncodeMessage(queue.NewMessage(time.Now(), nil))
	d := queue.NewDelivery("q", "c", string(raw))
	if err := queue.WebhookHandler(srv.URL, secret, time.Second, nil, nil)(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if err := <-verified; err != nil {
		t.Fatalf("the receiver could not verify the call: %v", err)
	}
}
