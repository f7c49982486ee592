package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// TestUI_AssetsWithSecurityHeaders: the page and its assets are served without credentials,
// with a strict CSP; unknown names are 404.
func TestUI_AssetsWithSecurityHeaders(t *testing.T) {
	a := newAuthAPI(t, nil)
	for path, ct := range map[string]string{"/ui/": "text/html", "/ui/app.js": "javascript", "/ui/app.css": "text/css"} {
		r := a.do("GET", path, "")
		if r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Type"), ct) {
			t.Fatalf("GET %s = %d %s", path, r.status, r.header.Get("Content-Type"))
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s CSP = %q", path, csp)
		}
		if r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s X-Frame-Options = %q", path, r.header.Get("X-Frame-Options"))
		}
	}
	for path, ct := range map[string]string{"/ui/vendor/uplot/uPlot.iife.min.js": "javascript", "/ui/vendor/uplot/uPlot.min.css": "text/css",
		"/ui/vendor/uplot/LICENSE": "text/plain", "/ui/vendor/uplot/SOURCE": "text/plain"} {
		r := a.do("GET", path, "")
		if r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Type"), ct) || len(r.body) == 0 {
			t.Fatalf("GET %s = %d %s (%d bytes)", path, r.status, r.header.Get("Content-Type"), len(r.body))
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s CSP = %q", path, csp)
		}
	}
	for _, path := range []string{"/ui/vendor/uplot/nope.js", "/ui/vendor/nope/LICENSE", "/ui/vendor/%2e%2e/app.js", "/ui/vendor/uplot/..%2f..%2fapp.js", "/ui/vendor"} {
		wantError(t, a.do("GET", path, ""), http.StatusNotFound, "not_found")
	}
	wantError(t, a.do("GET", "/ui/nope.js", ""), http.StatusNotFound, "not_found")
	wantError(t, a.do("GET", "/ui/..%2fdashboard.go", ""), http.StatusNotFound, "not_found")
	if r := a.do("GET", "/ui", ""); r.status != http.StatusOK { // the redirect is followed
		t.Errorf("GET /ui = %d", r.status)
	}
}

// TestUI_SessionRules: login gives a session whose role is the token's; the cookie authorizes
// reads; writes need the CSRF header; a read session cannot write; a tampered or expired cookie
// is 401; a bad token is 401; without tokens the session says auth is off.
func TestUI_SessionRules(t *testing.T) {
	a := newAuthAPI(t, nil)
	wantError(t, a.do("POST", "/ui/login", `{"token":"nope"}`), http.StatusUnauthorized, "unauthorized")
	login := func(token string) (cookie string, body sessionBody) {
		r := a.do("POST", "/ui/login", `{"token":"`+token+`"}`)
		if r.status != http.StatusOK {
			t.Fatalf("login = %d %s", r.status, r.body)
		}
		set := r.header.Get("Set-Cookie")
		if !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "SameSite=Strict") || !strings.HasPrefix(set, SessionCookie+"=") {
			t.Fatalf("Set-Cookie = %q", set)
		}
		_ = json.Unmarshal(r.body, &body)
		return strings.SplitN(set, ";", 2)[0], body
	}
	cookie, sess := login("w-secret")
	if sess.Role != "write" || sess.Name != "writer" || sess.CSRF == "" || !sess.LoggedIn {
		t.Fatalf("session = %+v", sess)
	}
	if r := a.do("GET", "/ui/session", "", "Cookie: "+cookie); !strings.Contains(string(r.body), `"csrf":"`+sess.CSRF+`"`) {
		t.Errorf("GET /ui/session = %s", r.body)
	}
	wantError(t, a.do("GET", "/v1/builds/"+buildA, "", "Cookie: "+cookie), http.StatusNotFound, "not_found")
	wantError(t, a.do("DELETE", "/v1/builds/"+buildA, "", "Cookie: "+cookie), http.StatusForbidden, "forbidden")
	wantError(t, a.do("DELETE", "/v1/builds/"+buildA, "", "Cookie: "+cookie, CSRFHeader+": "+sess.CSRF+"x"), http.StatusForbidden, "forbidden")
	wantError(t, a.do("DELETE", "/v1/builds/"+buildA, "", "Cookie: "+cookie, CSRFHeader+": "+sess.CSRF), http.StatusNotFound, "not_found")
	wantError(t, a.do("GET", "/v1/queues", "", "Cookie: "+cookie), http.StatusForbidden, "forbidden") // admin route
	rcookie, rsess := login("r-secret")
	wantError(t, a.do("DELETE", "/v1/builds/"+buildA, "", "Cookie: "+rcookie, CSRFHeader+": "+rsess.CSRF), http.StatusForbidden, "forbidden")
	wantError(t, a.do("GET", "/v1/builds/"+buildA, "", "Cookie: "+cookie+"0"), http.StatusUnauthorized, "unauthorized")
	// A MAC made with another token's key does not pass for this token's name.
	parts := strings.Split(strings.TrimPrefix(cookie, SessionCookie+"="), ".")
	rparts := strings.Split(strings.TrimPrefix(rcookie, SessionCookie+"="), ".")
	parts[4] = rparts[4]
	wantError(t, a.do("GET", "/v1/builds/"+buildA, "", "Cookie: "+SessionCookie+"="+strings.Join(parts, ".")), http.StatusUnauthorized, "unauthorized")
	// Expired: a correctly signed cookie whose expiry has passed.
	writer := &credential{name: "writer", digest: sha256.Sum256([]byte("w-secret")), role: roleWrite}
	old, _ := newSessionCookie(writer, time.Now().Add(-time.Minute))
	wantError(t, a.do("GET", "/v1/builds/"+buildA, "", "Cookie: "+SessionCookie+"="+old), http.StatusUnauthorized, "unauthorized")
	fresh, _ := newSessionCookie(writer, time.Now().Add(time.Minute))
	wantError(t, a.do("GET", "/v1/builds/"+buildA, "", "Cookie: "+SessionCookie+"="+fresh), http.StatusNotFound, "not_found")
	// Without tokens: auth off, full role.
	open := newTestAPI(t, nil)
	if r := open.do("GET", "/ui/session", ""); !strings.Contains(string(r.body), `"authEnabled":false`) || !strings.Contains(string(r.body), `"role":"admin"`) {
		t.Errorf("session without tokens = %s", r.body)
	}
}

// TestQueueThroughputRoute: minutes are validated; the answer lists every minute, oldest first,
// with the counts the shared store holds.
func TestQueueThroughputRoute(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	admin, err := queue.NewAdmin(b, "q1")
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAPI(t, func(_ *Config, d *Deps) {
		d.Queues = func(name string) *queue.Admin {
			if name == "q1" {
				return admin
			}
			return nil
		}
		d.QueueNames = func() []string { return []string{"q1"} }
		d.Throughput = b
	})
	now := time.Now().Unix() / 60
	if err := b.AddThroughput(context.Background(), "q1", now, map[string]int64{"acked": 4, "dead": 1}); err != nil {
		t.Fatal(err)
	}
	r := a.do("GET", "/v1/queues/q1/throughput?minutes=3", "")
	var body struct {
		Minutes []throughputMinute `json:"minutes"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || r.status != http.StatusOK || len(body.Minutes) != 3 {
		t.Fatalf("throughput = %d %s", r.status, r.body)
	}
	if last := body.Minutes[2]; last.Counts["acked"] != 4 || last.Counts["dead"] != 1 || !body.Minutes[0].Minute.Before(last.Minute) {
		t.Fatalf("minutes = %+v", body.Minutes)
	}
	for _, bad := range []string{"0", "1441", "x"} {
		wantError(t, a.do("GET", "/v1/queues/q1/throughput?minutes="+bad, ""), http.StatusBadRequest, "invalid")
	}
	wantError(t, a.do("GET", "/v1/queues/nope/throughput", ""), http.StatusNotFound, "not_found")
	if r := a.do("GET", "/v1/queues", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"name":"q1"`) {
		t.Fatalf("GET /v1/queues = %d %s", r.status, r.body)
	}
}
