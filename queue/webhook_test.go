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

func TestWebhookHandler_PostsJobAndAccepts2xx(t *testing.T) {
	var got queue.WebhookJob
	var ctype, method string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, ctype = r.Method, r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		var generic map[string]any
		_ = json.Unmarshal(b, &generic)
		for _, k := range []string{"queue", "retryCount", "enqueueTime", "payload", "raw"} {
			if _, ok := generic[k]; !ok {
				t.Errorf("body lacks %q: %s", k, b)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	d := webhookDelivery(t)
	if err := queue.WebhookHandler(srv.URL, "", time.Second, nil, nil)(context.Background(), d); err != nil {
		t.Fatalf("2xx: %v", err)
	}
	if method != http.MethodPost || ctype != "application/json" {
		t.Errorf("method %s, content-type %q", method, ctype)
	}
	if got.Queue != "jobs" || got.RetryCount != 2 || got.Raw != d.Raw ||
		!got.EnqueueTime.Equal(d.Message.EnqueueTime) || string(got.Payload) != `{"a":1}` {
		t.Errorf("job = %+v", got)
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

func TestWebhookHandler_NullPayloadForForeignMessage(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&body)
	}))
	defer srv.Close()
	d := queue.NewDelivery("jobs", "c1", `{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`)
	if err := queue.WebhookHandler(srv.URL, "", time.Second, nil, nil)(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if v, ok := body["payload"]; !ok || v != nil {
		t.Errorf("payload = %v (present %v)", v, ok)
	}
	if body["raw"] != d.Raw {
		t.Errorf("raw = %v", body["raw"])
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
