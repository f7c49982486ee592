package executor_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
