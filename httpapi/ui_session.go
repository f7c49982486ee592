package httpapi

import (
	"net/http"
	"time"

	"github.com/redstate/redstate"
)

// loginRequest is the body of POST /ui/login.
type loginRequest struct {
	Token string `json:"token"`
}

// sessionBody describes the caller's dashboard session (GET /ui/session, POST /ui/login).
type sessionBody struct {
	// AuthEnabled is false when the server has no tokens: every route is open.
	AuthEnabled bool `json:"authEnabled"`
	// LoggedIn reports whether the request carried a valid session.
	LoggedIn bool `json:"loggedIn"`
	// Name and Role are the token's (role: read, write or admin); empty when not logged in.
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
	// CSRF is the token to send in X-CSRF-Token on state-changing requests.
	CSRF string `json:"csrf,omitempty"`
	// Expires is when the session ends.
	Expires *time.Time `json:"expires,omitempty"`
}

// uiSessionRoutes registers the dashboard's login, logout and session routes.
func (s *server) uiSessionRoutes() {
	s.handle("POST /ui/login", roleNone, s.uiLogin)
	s.handle("POST /ui/logout", roleNone, s.uiLogout)
	s.handle("GET /ui/session", roleNone, s.uiSession)
}

// uiLogin exchanges a token for a session cookie. Failed attempts count against the client's
// failed-auth budget like a bad bearer token. Errors: EINVALID, EUNAUTHORIZED,
// ETOOMANYREQUESTS.
func (s *server) uiLogin(w http.ResponseWriter, r *http.Request) error {
	if !s.auth.enabled() {
		writeJSON(w, http.StatusOK, sessionBody{AuthEnabled: false, Role: roleAdmin.String()})
		return nil
	}
	if err := s.throttle.blocked(r); err != nil {
		return err
	}
	var req loginRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	cred, err := s.auth.login(req.Token)
	if err != nil {
		s.throttle.failed(r)
		return err
	}
	expires := time.Now().Add(SessionLifetime).Truncate(time.Second)
	value, sess := newSessionCookie(cred, expires)
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: value, Path: "/", Expires: expires, MaxAge: int(SessionLifetime / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	writeJSON(w, http.StatusOK, sessionBody{AuthEnabled: true, LoggedIn: true, Name: cred.name, Role: cred.role.String(), CSRF: sess.csrf(), Expires: &expires})
	return nil
}

// uiLogout clears the session cookie (the cookie is stateless: a copy kept elsewhere stays valid
// until it expires or its token changes).
func (s *server) uiLogout(w http.ResponseWriter, r *http.Request) error {
	clearSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// uiSession describes the caller's session: whether auth is on, and if the request carries a
// valid session its name, role and CSRF token.
func (s *server) uiSession(w http.ResponseWriter, r *http.Request) error {
	if !s.auth.enabled() {
		writeJSON(w, http.StatusOK, sessionBody{AuthEnabled: false, Role: roleAdmin.String()})
		return nil
	}
	sess, ok, err := s.auth.sessionOf(r, time.Now())
	if !ok || err != nil {
		if redstate.IsCode(err, redstate.EUNAUTHORIZED) {
			clearSessionCookie(w, r)
		}
		writeJSON(w, http.StatusOK, sessionBody{AuthEnabled: true})
		return nil
	}
	writeJSON(w, http.StatusOK, sessionBody{AuthEnabled: true, LoggedIn: true, Name: sess.cred.name, Role: sess.cred.role.String(), CSRF: sess.csrf()})
	return nil
}

// clearSessionCookie expires the session cookie.
func clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}
