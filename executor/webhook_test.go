package executor_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/webhook"
)

func TestWebhookHandler_CallsAreSignedAndVerifiable(t *testing.T) {
	secret := "stage-secret-0123456789"
	verified := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verified <- webhook.Verify([]byte(secret), r.Header, body, time.Now(), 0)
	}))
	defer srv.Close()
	h := executor.WebhookHandler(srv.URL, secret, time.Second, nil)
	if _, err := h(context.Background(), executor.StageRequest{TaskID: "t1", Stage: "s0", FencingToken: 3}); err != nil {
		t.Fatal(err)
	}
	if err := <-verified; err != nil {
		t.Fatalf("the receiver could not verify the stage call: %v", err)
	}
}

// TestWebhookHandler_ContextValueNotAStringNamesTheKey: a 2xx answer whose contextData holds a
// number fails the attempt with an error naming the key (not only the map, in Go's terms, so
// the webhook's author can tell which value to fix); string values replace the context.
func TestWebhookHandler_ContextValueNotAStringNamesTheKey(t *testing.T) {
	answer := `{"contextData":{"region":"eu","retries":5}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, answer)
	}))
	defer srv.Close()
	h := executor.WebhookHandler(srv.URL, "", time.Second, nil)
	_, err := h(t.Context(), executor.StageRequest{TaskID: "t1", Stage: "s0"})
	if err == nil || !strings.Contains(err.Error(), `contextData["retries"] must be a JSON string, got 5`) {
		t.Fatalf("answer with a number: %v", err)
	}
	answer = `{"contextData":{"region":"eu","retries":"5"}}`
	data, err := h(t.Context(), executor.StageRequest{TaskID: "t1", Stage: "s0"})
	if err != nil || data["retries"] != "5" || data["region"] != "eu" || len(data) != 2 {
		t.Fatalf("answer with strings: %v, %v", data, err)
	}
}
