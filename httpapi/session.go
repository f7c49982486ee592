package httpapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
)

// Browser sessions for the dashboard. A token holder logs in once (POST /ui/login with the
// token); the answer sets an HttpOnly, SameSite=Strict session cookie and returns a CSRF token.
// Requests that carry the cookie instead of a bearer token are authorized with the role of the
// token that logged in; state-changing ones must also send the CSRF token in X-CSRF-Token.
//
// The cookie is stateless, so every instance that has the same tokens configured accepts it:
// "v1.<credential>.<expiry unix>.<nonce>.<mac>", the MAC an HMAC-SHA256 keyed with the
// credential's token digest. Changing or removing a token ends its sessions.

const (
	// SessionCookie is the dashboard's session cookie.
	SessionCookie = "redstate_session"
	// CSRFHeader carries the session's CSRF token on state-changing requests.
	CSRFHeader = "X-CSRF-Token"
	// SessionLifetime is how long a dashboard session lasts.
	SessionLifetime = 12 * time.Hour
)

// session is a verified session cookie.
type session struct {
	cred  *credential
	nonce string
}

// mac returns the MAC of the cookie's payload under cred's key.
func sessionMAC(cred *credential, payload string) []byte {
	m := hmac.New(sha256.New, cred.digest[:])
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// csrf is the session's CSRF token: a MAC of its nonce, so that it cannot be derived from the
// cookie without the key, and is the same on every instance.
func (s session) csrf() string {
	return hex.EncodeToString(sessionMAC(s.cred, "csrf."+s.nonce))[:32]
}

// newSessionCookie returns a session of cred valid until expires.
func newSessionCookie(cred *credential, expires time.Time) (string, session) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := base64.RawURLEncoding.EncodeToString(b[:])
	payload := "v1." + hex.EncodeToString([]byte(cred.name)) + "." + strconv.FormatInt(expires.Unix(), 10) + "." + nonce
	return payload + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(cred, payload)), session{cred: cred, nonce: nonce}
}

// sessionOf verifies r's session cookie. ok is false without a cookie; an invalid or expired
// one is EUNAUTHORIZED.
func (a *authenticator) sessionOf(r *http.Request, now time.Time) (s session, ok bool, err error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return session{}, false, nil
	}
	invalid := redstate.Errorf(redstate.EUNAUTHORIZED, "the dashboard session is invalid or has expired; log in again")
	parts := strings.Split(c.Value, ".")
	if len(parts) != 5 || parts[0] != "v1" {
		return session{}, true, invalid
	}
	name, err := hex.DecodeString(parts[1])
	if err != nil {
		return session{}, true, invalid
	}
	expires, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || now.Unix() >= expires {
		return session{}, true, invalid
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[4])
	if err != nil {
		return session{}, true, invalid
	}
	payload := strings.Join(parts[:4], ".")
	for i := range a.creds {
		cred := &a.creds[i]
		if cred.name == string(name) && hmac.Equal(mac, sessionMAC(cred, payload)) {
			return session{cred: cred, nonce: parts[3]}, true, nil
		}
	}
	return session{}, true, invalid
}

// authorizeSession authorizes a request that carries a session cookie for role need; a request
// that is not GET, HEAD or OPTIONS must carry the session's CSRF token.
func (a *authenticator) authorizeSession(r *http.Request, s session, need role) (string, error) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !hmac.Equal([]byte(r.Header.Get(CSRFHeader)), []byte(s.csrf())) {
			return s.cred.name, redstate.Errorf(redstate.EFORBIDDEN, "missing or wrong %s header (the dashboard sends the token its login returned)", CSRFHeader)
		}
	}
	if s.cred.role < need {
		return s.cred.name, redstate.Errorf(redstate.EFORBIDDEN, "token %q lacks the %s role this operation needs", s.cred.name, need)
	}
	return s.cred.name, nil
}

// login finds the credential of a token (EUNAUTHORIZED if none).
func (a *authenticator) login(token string) (*credential, error) {
	digest := sha256.Sum256([]byte(strings.TrimSpace(token)))
	var found *credential
	for i := range a.creds {
		if hmac.Equal(digest[:], a.creds[i].digest[:]) {
			found = &a.creds[i]
		}
	}
	if found == nil {
		return nil, redstate.Errorf(redstate.EUNAUTHORIZED, "invalid token")
	}
	return found, nil
}
