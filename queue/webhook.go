package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate/webhook"
)

// DefaultWebhookTimeout bounds one webhook call when WebhookHandler is given no timeout.
const DefaultWebhookTimeout = 30 * time.Second

// webhookSnippet bounds how much of a failing response body goes into the error.
const webhookSnippet = 256

// Headers of every webhook call, besides Content-Type and the signature's (package webhook).
const (
	// HeaderQueue carries the queue the job was taken from.
	HeaderQueue = "X-Redstate-Queue"
	// HeaderJobID carries the job's JobId; absent when the job has none (a message a
	// producer outside redstate wrote without one).
	HeaderJobID = "X-Redstate-Job-Id"
	// HeaderAttempt carries the attempt number: 1 on the first delivery, RetryCount + 1 after
	// retries. A job redelivered after a crash keeps its number (delivery is at least once).
	HeaderAttempt = "X-Redstate-Attempt"
	// HeaderDeadline carries when redstate gives up on the call (RFC 3339, UTC, milliseconds):
	// the call's timeout or the handler's own deadline, whichever comes first. An answer
	// after it counts as a failure.
	HeaderDeadline = "X-Redstate-Deadline"
)

// deadlineLayout is HeaderDeadline's format: RFC 3339 with milliseconds.
const deadlineLayout = "2006-01-02T15:04:05.000Z07:00"

// WebhookBody builds the JSON body WebhookHandler POSTs for a job.
type WebhookBody func(job *Delivery) ([]byte, error)

// PayloadWebhookBody is the default WebhookBody: the job's payload as its producer sent it —
// its Payload member when it has one (a Producer's job), else the members its producer wrote
// beside the envelope, as one object (a plain JSON object LPUSHed by a producer outside
// redstate: {"to":"a@example.com"} is posted as {"to":"a@example.com"}, whatever RetryCount
// or EnqueueTime it carries), else null.
func PayloadWebhookBody(job *Delivery) ([]byte, error) {
	m := job.Message
	switch {
	case len(m.Payload) > 0:
		return m.Payload, nil
	case len(m.Fields) > 0:
		return json.Marshal(m.Fields)
	default:
		return []byte("null"), nil
	}
}

// WebhookHandler returns a Handler that POSTs each job to url, as built by body (nil:
// PayloadWebhookBody), with Content-Type application/json and the job's queue, id, attempt
// and deadline in the headers HeaderQueue, HeaderJobID, HeaderAttempt and HeaderDeadline. A
// 2xx answer is success; any other status (the error names it and a snippet of the body), a
// timeout or a connection error is a failure, so the job is retried or dead-lettered by the
// Worker. timeout bounds each call (0: DefaultWebhookTimeout), and so does the handler's ctx
// when it ends first; client nil uses a client without its own timeout (the per-call
// timeout applies). With a non-empty secret every call is signed (package webhook:
// X-Redstate-Timestamp and X-Redstate-Signature, HMAC-SHA256 of timestamp and body).
func WebhookHandler(url, secret string, timeout time.Duration, client *http.Client, body WebhookBody) Handler {
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	if client == nil {
		client = &http.Client{}
	}
	if body == nil {
		body = PayloadWebhookBody
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
		setJobHeaders(ctx, req.Header, job)
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

// setJobHeaders sets the job headers of a call for job, whose deadline is ctx's.
func setJobHeaders(ctx context.Context, h http.Header, job *Delivery) {
	h.Set(HeaderQueue, job.Queue)
	if job.Message.JobID != "" {
		h.Set(HeaderJobID, job.Message.JobID)
	}
	h.Set(HeaderAttempt, strconv.Itoa(job.Message.RetryCount+1))
	if d, ok := ctx.Deadline(); ok {
		h.Set(HeaderDeadline, d.UTC().Format(deadlineLayout))
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
