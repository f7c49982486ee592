package webhook_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/redstate/redstate/webhook"
)

func TestSignAndVerify(t *testing.T) {
	secret, body := []byte("s3cret-0123456789"), []byte(`{"recordId":1}`)
	now := time.Unix(1732284000, 0)
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/hook", nil)
	webhook.SignRequest(req, body, now, secret, []byte("old-secret"))
	if err := webhook.Verify(secret, req.Header, body, now.Add(time.Minute), 0); err != nil {
		t.Fatalf("genuine call: %v", err)
	}
	if err := webhook.Verify([]byte("old-secret"), req.Header, body, now, 0); err != nil {
		t.Fatalf("rotated secret: %v", err)
	}
	for name, c := range map[string]struct {
		secret []byte
		body   []byte
		at     time.Time
		want   error
	}{
		"tampered body": {secret, []byte(`{"recordId":2}`), now, webhook.ErrBadSignature},
		"wrong secret":  {[]byte("other"), body, now, webhook.ErrBadSignature},
		"replayed":      {secret, body, now.Add(10 * time.Minute), webhook.ErrStale},
		"from future":   {secret, body, now.Add(-10 * time.Minute), webhook.ErrStale},
	} {
		if err := webhook.Verify(c.secret, req.Header, c.body, c.at, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if err := webhook.Verify(secret, http.Header{}, body, now, 0); !errors.Is(err, webhook.ErrMissingSignature) {
		t.Errorf("unsigned: %v", err)
	}
	// The documented construction: HMAC-SHA256("k", "1.b"), computed independently.
	if got := webhook.Sign([]byte("k"), time.Unix(1, 0), []byte("b")); got != "v1=2946e37a45bb02a0bf1bf1a7d9219543801fedd301f9f485aebd72c928639bea" {
		t.Fatalf("signature %q does not follow the documented construction", got)
	}
}
