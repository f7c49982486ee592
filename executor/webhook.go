package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/redstate/redstate/webhook"
)

// webhookResponse is the optional body of a 2xx webhook answer; contextData's values are read
// one by one so that a value that is not a string is named by its key.
type webhookResponse struct {
	ContextData map[string]json.RawMessage `json:"contextData"`
}

// contextDataOf returns the context data of a webhook answer. Errors: a value that is not a
// JSON string, named by its key.
func contextDataOf(raw map[string]json.RawMessage) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			shown := string(v)
			if len(shown) > 64 {
				shown = shown[:64] + "…"
			}
			return nil, fmt.Errorf("contextData[%q] must be a JSON string, got %s (context values are strings: encode numbers, booleans and objects as text)", k, shown)
		}
		out[k] = s
	}
	return out, nil
}

// WebhookHandler returns a StageHandler that POSTs each stage as JSON to url:
//
//	{"taskId","tenantId","planId","stage","stageIndex","contextData","fencingToken","attempt"}
//
// A 2xx answer is success; its body may be {"contextData":{...}} to replace the context data
// for the following stages (an empty body, or one without contextData, keeps it). Any other
// status, a transport error or a timeout fails the attempt. client nil: a client with timeout.
//
// With a non-empty secret every call is signed (package webhook: X-Redstate-Timestamp and
// X-Redstate-Signature, HMAC-SHA256 of timestamp and body).
func WebhookHandler(url, secret string, timeout time.Duration, client *http.Client) StageHandler {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if client == nil {
		client = &http.Client{}
	}
	return func(ctx context.Context, req StageRequest) (map[string]string, error) {
		body, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("X-Fencing-Token", fmt.Sprint(req.FencingToken))
		webhook.SignRequest(hr, body, time.Now(), []byte(secret))
		resp, err := client.Do(hr)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", url, err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxCheckpointBytes))
		if err != nil {
			return nil, fmt.Errorf("webhook %s: reading the answer: %w", url, err)
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			snippet := string(raw)
			if len(snippet) > 200 {
				snippet = snippet[:200]
			}
			return nil, fmt.Errorf("webhook %s answered %d: %s", url, resp.StatusCode, snippet)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil, nil
		}
		var out webhookResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("webhook %s: 2xx answer is not JSON {\"contextData\":{...}}: %w", url, err)
		}
		data, err := contextDataOf(out.ContextData)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: 2xx answer: %w", url, err)
		}
		return data, nil
	}
}
