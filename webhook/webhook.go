// Package webhook signs the HTTP calls redstate makes to webhooks (queue job handlers and
// executor stage handlers) and verifies them on the receiving side.
//
// Every call carries two headers:
//
//	X-Redstate-Timestamp: 1732284000                      (Unix seconds when the call was signed)
//	X-Redstate-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>
//
// A receiver recomputes the HMAC over the timestamp, a '.', and the raw body bytes with the shared
// secret, compares it in constant time with each v1= value (several are sent, comma separated,
// while a secret is being rotated), and rejects calls whose timestamp is further than a few
// minutes from its clock (replayed calls). Verify does all of that for Go receivers.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a signed call.
const (
	// HeaderTimestamp carries the signing time in Unix seconds.
	HeaderTimestamp = "X-Redstate-Timestamp"
	// HeaderSignature carries one or more "v1=<hex>" signatures, comma separated.
	HeaderSignature = "X-Redstate-Signature"
)

// DefaultTolerance is how far a call's timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// Sign returns the v1 signature of body signed at ts with secret: "v1=" and the hex HMAC-SHA256
// of "<unix seconds>.<body>".
func Sign(secret []byte, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// SignRequest sets the timestamp and signature headers of req for body, signed at now with each
// secret (the first is current; more are sent while a secret is rotated). No secret: no headers.
func SignRequest(req *http.Request, body []byte, now time.Time, secrets ...[]byte) {
	var sigs []string
	for _, s := range secrets {
		if len(s) > 0 {
			sigs = append(sigs, Sign(s, now, body))
		}
	}
	if len(sigs) == 0 {
		return
	}
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderSignature, strings.Join(sigs, ","))
}

// Errors of Verify.
var (
	// ErrMissingSignature: the call carries no timestamp or no signature.
	ErrMissingSignature = errors.New("webhook: missing " + HeaderTimestamp + " or " + HeaderSignature)
	// ErrStale: the timestamp is outside the tolerance (a replayed or badly delayed call).
	ErrStale = errors.New("webhook: timestamp outside the tolerance")
	// ErrBadSignature: no signature matches the body with the secret.
	ErrBadSignature = errors.New("webhook: signature does not match")
)

// Verify checks a received call: its headers h and raw body against secret, with its timestamp
// at most tolerance (DefaultTolerance when <= 0) from now. It returns nil for a genuine call.
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	tsText, sigText := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if tsText == "" || sigText == "" {
		return ErrMissingSignature
	}
	unix, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not Unix seconds", ErrMissingSignature, HeaderTimestamp, tsText)
	}
	ts := time.Unix(unix, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return ErrStale
	}
	want := Sign(secret, ts, body)
	for sig := range strings.SplitSeq(sigText, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(sig)), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}
