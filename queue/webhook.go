package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/redstate/redstate/webhook"
)

// DefaultWebhookTimeout bounds one webhook call when WebhookHandler is given no timeout.
const DefaultWebhookTimeout = 30 * time.Second

// webhookSnippet bounds how much of a failing response body goes into the error.
const webhookSnippet = 256

// WebhookJob is the JSON body WebhookHandler POSTs for each job by default (JSONWebhookBody).
type WebhookJob struct {
	// Queue is the queue the job was taken from.
	Queue string `json:"queue"`
	// RetryCount is how many times the job has been retried (0 on the first attempt).
	RetryCount int `json:"retryCount"`
	// EnqueueTime is when the job was first enqueued (RFC 3339, UTC).
	EnqueueTime time.Time `json:"enqueueTime"`
	// Payload is the job's optional payload (null when absent).
	Payload json.RawMessage `json:"payload"`
	// Raw is the exact stored message.
	Raw string `json:"raw"`
}

// WebhookBody builds the JSON body WebhookHandler POSTs for a job.
type WebhookBody func(job *Delivery) ([]byte, error)

// JSONWebhookBody is the default WebhookBody: the job as a WebhookJob. Payload is null when
// the job has none.
func JSONWebhookBody(job *Delivery) ([]byte, error) {
	m := job.Message
	payload := m.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	return json.Marshal(WebhookJob{
		Queue:       job.Queue,
		RetryCount:  m.RetryCount,
		EnqueueTime: m.EnqueueTime.UTC(),
		Payload:     payload,
		Raw:         job.Raw,
	})
}

// WebhookHandler returns a Handler that POSTs each job to url, as built by body (nil:
// JSONWebhookBody), with Content-Type application/json. A 2xx answer is success; any other status (the error names it
// and a snippet of the body), a timeout or a connection error is a failure, so the job is
// retried or dead-lettered by the Worker. timeout bounds each call (0: DefaultWebhookTimeout);
// client nil uses a client without its own timeout (the per-call timeout applies). With a
// non-empty secret every call is signed (package webhook: X-Redstate-Timestamp and
// X-Redstate-Signature, HMAC-SHA256 of timestamp and body).
func WebhookHandler(url, secret string, timeout time.Duration, client *http.Client, body WebhookBody) Handler {
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	if client == nil {
		client = &http.Client{}
	}
	if body == nil {
		body = JSONWebhookBody
	}
	encode := body
	return func(ctx context.Context, job *Delivery) error {
		body, err := encode(job)
		if err != nil {
			return fmt.Errorf("webhook: encode job: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		webhook.SignRequest(req, body, time.Now(), []byte(secret))
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("webhook POST %s: timed out after %s: %w", url, timeout, err)
			}
			return fmt.Errorf("webhook POST %s: %w", url, err)
		}
		defer resp.Body.Close()
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, webhookSnippet))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return nil
		}
		return fmt.Errorf("webhook POST %s: status %d: %s", url, resp.StatusCode, cleanSnippet(snippet))
	}
}

// cleanSnippet makes a response body fit for an error message: valid UTF-8, one line.
func cleanSnippet(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	if s == "" {
		return "(empty body)"
	}
	return s
}
