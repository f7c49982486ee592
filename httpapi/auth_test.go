package httpapi

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/redstate/redstate/config"
)

func newAuthAPI(t *testing.T, logs *syncWriter) *testAPI {
	t.Helper()
	return newTestAPI(t, func(c *Config, _ *Deps) {
		c.Tokens = []config.Token{
			{Name: "reader", Token: "r-secret", Roles: []string{"read"}},
			{Name: "writer", Token: "w-secret", Roles: []string{"write"}},
			{Name: "boss", Token: "a-secret", Roles: []string{"admin"}},
		}
		if logs != nil {
			c.Logger = loggerTo(logs)
		}
	})
}

func TestAuth_Roles(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	a := newAuthAPI(t, logs)

	r := a.do("GET", "/v1/builds/"+buildA, "")
	wantError(t, r, http.StatusUnauthorized, "unauthorized")
	if r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
	}
	wantError(t, a.do("GET", "/v1/builds/"+buildA, "", "Authorization: Bearer wrong"), 401, "unauthorized")
	wantError(t, a.do("GET", "/v1/builds/"+buildA, "", "Authorization: Basic r-secret"), 401, "unauthorized")
	wantError(t, a.do("GET", "/metrics", ""), 401, "unauthorized")

	a.token = "r-secret"
	wantError(t, a.do("GET", "/v1/builds/"+buildA, ""), 404, "not_found")
	wantError(t, a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p")), http.StatusForbidden, "forbidden")
	wantError(t, a.do("DELETE", "/v1/builds/"+buildA, ""), http.StatusForbidden, "forbidden")
	if r := a.do("GET", "/metrics", ""); r.status != 200 {
		t.Errorf("metrics with read token: %d", r.status)
	}

	a.token = "w-secret"
	a.put(buildA, "p")
	if r := a.do("GET", "/v1/builds/"+buildA, ""); r.status != 200 {
		t.Errorf("write implies read: %d", r.status)
	}
	a.token = "a-secret"
	if r := a.do("DELETE", "/v1/builds/"+buildA, ""); r.status != 204 {
		t.Errorf("admin implies write: %d", r.status)
	}

	a.token = ""
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := a.do("GET", p, ""); r.status != 200 {
			t.Errorf("%s without token: %d", p, r.status)
		}
	}
	out := logs.String()
	if strings.Contains(out, "secret") {
		t.Error("a token secret was logged")
	}
	if !strings.Contains(out, "token=writer") {
		t.Errorf("token name not logged: %s", out)
	}
}

func TestAuth_OffWithoutTokens(t *testing.T) {
	a := newTestAPI(t, nil)
	a.put(buildA, "p")
	if r := a.do("DELETE", "/v1/builds/"+buildA, ""); r.status != 204 {
		t.Fatalf("DELETE without auth: %d", r.status)
	}
}
