package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/config"
)

// testAPI is an API over a fresh memstore, served by an httptest.Server.
type testAPI struct {
	t     *testing.T
	srv   *httptest.Server
	store *memstore.Store
	reg   *prometheus.Registry
	token string // sent as Bearer token when non-empty
}

// newTestAPI starts an API; mutate may adjust the config and deps before New.
func newTestAPI(t *testing.T, mutate func(*Config, *Deps)) *testAPI {
	t.Helper()
	store := memstore.New(memstore.Options{TTL: time.Hour})
	t.Cleanup(func() { _ = store.Close() })
	reg := prometheus.NewRegistry()
	cfg := Config{
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registerer:        reg,
		Gatherer:          reg,
		HeartbeatInterval: 50 * time.Millisecond,
	}
	deps := Deps{Builds: store}
	if mutate != nil {
		mutate(&cfg, &deps)
	}
	h, err := New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testAPI{t: t, srv: srv, store: store, reg: reg}
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; headers are "Name: value" strings. A body or a state-changing method gets
// Content-Type application/json unless a header sets another.
func (a *testAPI) do(method, path, body string, headers ...string) response {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != "" || (method != http.MethodGet && method != http.MethodHead) {
		req.Header.Set("Content-Type", "application/json") // the API requires it on state-changing requests
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		if strings.EqualFold(name, "Host") {
			req.Host = strings.TrimSpace(value)
			continue
		}
		if strings.TrimSpace(value) == "" {
			req.Header.Del(name) // "Content-Type:" sends the request without that header
			continue
		}
		req.Header.Set(name, strings.TrimSpace(value))
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	validateResponse(a.t, req, res.StatusCode, res.Header, b)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// wantError checks a JSON error response.
func wantError(t *testing.T, r response, status int, code string) errorBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var e errorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if e.Code != code {
		t.Fatalf("code = %q, want %q (message %q)", e.Code, code, e.Message)
	}
	if e.Message == "" {
		t.Fatal("empty error message")
	}
	return e
}

const (
	buildA = "550e8400-e29b-41d4-a716-446655440000"
	buildB = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	buildC = "6ba7b811-9dad-11d1-80b4-00c04fd430c8"
)

// docJSON is a seed-shaped document for id in project.
func docJSON(id, project string) string {
	return `{"buildId":"` + id + `","projectId":` + mustJSON(project) + `,"platforms":["android"],"status":"IN_PROGRESS",` +
		`"platformResults":{"android":{"platform":"android","status":"SUCCESS","progress":100,"logUrl":null,` +
		`"downloadUrl":"x/android/app.apk","errorMessage":null,"startedAt":"2025-11-09T10:30:00","completedAt":"2025-11-09T10:35:00"}},` +
		`"estimatedTime":15,"createdAt":"2025-11-09T10:30:00","updatedAt":"2025-11-09T10:33:00"}`
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// put stores a document and returns its ETag (unquoted).
func (a *testAPI) put(id, project string) string {
	a.t.Helper()
	r := a.do("PUT", "/v1/builds/"+id, docJSON(id, project))
	if r.status != http.StatusOK {
		a.t.Fatalf("PUT %s: %d %s", id, r.status, r.body)
	}
	return strings.Trim(r.header.Get("ETag"), `"`)
}

func TestNew_RejectsBadConfig(t *testing.T) {
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = store.Close() })
	cases := map[string]Config{
		"unknown role":   {Tokens: []config.Token{{Name: "x", Token: "s", Roles: []string{"root"}}}},
		"no roles":       {Tokens: []config.Token{{Name: "x", Token: "s"}}},
		"empty secret":   {Tokens: []config.Token{{Name: "x", Roles: []string{"read"}}}},
		"same secret":    {Tokens: []config.Token{{Name: "x", Token: "s", Roles: []string{"read"}}, {Name: "y", Token: "s", Roles: []string{"write"}}}},
		"negative limit": {MaxBodyBytes: -1},
	}
	for name, cfg := range cases {
		if _, err := New(cfg, Deps{Builds: store}); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Error("New without a store succeeded")
	}
}

func TestUnknownRoute_404JSON(t *testing.T) {
	a := newTestAPI(t, nil)
	wantError(t, a.do("GET", "/nope", ""), http.StatusNotFound, "not_found")
	wantError(t, a.do("GET", "/v1/builds/"+buildA+"/nope", ""), http.StatusNotFound, "not_found")
}

func TestWrongMethod_405JSONWithAllow(t *testing.T) {
	a := newTestAPI(t, nil)
	r := a.do("POST", "/v1/builds/"+buildA, "{}")
	wantError(t, r, http.StatusMethodNotAllowed, EMETHODNOTALLOWED)
	allow := r.header.Get("Allow")
	for _, m := range []string{"GET", "HEAD", "PUT", "DELETE"} {
		if !strings.Contains(allow, m) {
			t.Errorf("Allow = %q, missing %s", allow, m)
		}
	}
	wantError(t, a.do("DELETE", "/healthz", ""), http.StatusMethodNotAllowed, EMETHODNOTALLOWED)
}

func TestHealthz(t *testing.T) {
	a := newTestAPI(t, nil)
	r := a.do("GET", "/healthz", "")
	if r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
}

func TestReadyz(t *testing.T) {
	var unready string
	a := newTestAPI(t, func(_ *Config, d *Deps) {
		d.Health = func(context.Context) []component.Status {
			return []component.Status{{Name: "builds", State: component.StateOK}, {Name: "queue", Unready: unready}}
		}
	})
	r := a.do("GET", "/readyz", "")
	if r.status != 200 || string(r.body) != `{"status":"ready"}` {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	unready = "redis is unreachable"
	r = a.do("GET", "/readyz", "")
	e := wantError(t, r, http.StatusServiceUnavailable, "unavailable")
	if e.Message != "not ready: redis is unreachable" {
		t.Errorf("message = %q; the unauthenticated probe must not show the address or dial error", e.Message)
	}
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
	}
}

func TestMetrics_CountsByRoutePattern(t *testing.T) {
	a := newTestAPI(t, nil)
	a.put(buildA, "p")
	a.do("GET", "/v1/builds/"+buildB, "")
	a.do("GET", "/no/such/"+buildC, "")
	r := a.do("GET", "/metrics", "")
	if r.status != 200 {
		t.Fatalf("metrics: %d %s", r.status, r.body)
	}
	text := string(r.body)
	for _, want := range []string{
		`redstate_http_requests_total{code="200",method="PUT",route="PUT /v1/builds/{buildId}"} 1`,
		`redstate_http_requests_total{code="404",method="GET",route="GET /v1/builds/{buildId}"} 1`,
		`redstate_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`redstate_http_request_duration_seconds_count{method="PUT",route="PUT /v1/builds/{buildId}"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, buildA) || strings.Contains(text, buildC) {
		t.Error("a raw path leaked into a metric label")
	}
}

func TestNew_SharesRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = store.Close() })
	for range 2 {
		if _, err := New(Config{Registerer: reg}, Deps{Builds: store}); err != nil {
			t.Fatalf("New: %v", err)
		}
	}
}

func TestRequestID_EchoedOrGenerated(t *testing.T) {
	a := newTestAPI(t, nil)
	if got := a.do("GET", "/healthz", "", "X-Request-Id: abc-123").header.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("echoed id = %q", got)
	}
	if got := a.do("GET", "/healthz", "").header.Get("X-Request-Id"); len(got) != 32 {
		t.Errorf("generated id = %q", got)
	}
}

// panicStore panics on Get.
type panicStore struct{ buildstatus.Store }

func (panicStore) Get(context.Context, string) (*buildstatus.Build, error) { panic("boom") }

func TestPanic_500JSONAndLogged(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	a := newTestAPI(t, func(c *Config, d *Deps) {
		d.Builds = panicStore{d.Builds}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	e := wantError(t, a.do("GET", "/v1/builds/"+buildA, ""), http.StatusInternalServerError, "internal")
	if e.Message != "internal error" {
		t.Errorf("message = %q", e.Message)
	}
	if !strings.Contains(logs.String(), "boom") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

func TestReadyz_DegradedBlockIsNotReady(t *testing.T) {
	var degraded component.Status
	a := newTestAPI(t, func(_ *Config, d *Deps) {
		d.Health = func(context.Context) []component.Status {
			return []component.Status{{Name: "builds", State: component.StateOK}, degraded}
		}
	})
	if r := a.do("GET", "/readyz", ""); r.status != 200 {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	degraded = component.Status{Name: "executor", State: component.StateDegraded, Unready: "degraded: executor (waiting for Redis)"}
	e := wantError(t, a.do("GET", "/readyz", ""), http.StatusServiceUnavailable, "unavailable")
	if !strings.Contains(e.Message, "degraded: executor") {
		t.Errorf("message = %q", e.Message)
	}
}
