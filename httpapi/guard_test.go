package httpapi

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/queue"
)

func TestStrictJSON_DuplicateMemberRejected(t *testing.T) {
	a := newTestAPI(t, nil)
	var doc map[string]any
	_ = json.Unmarshal([]byte(docJSON(buildA, "p")), &doc)
	body := mustJSON(doc)
	// The same member twice at the top level, then inside a nested object.
	top := strings.Replace(body, `{`, `{"projectId":"other",`, 1)
	e := wantError(t, a.do("PUT", "/v1/builds/"+buildA, top), 400, "invalid")
	if !strings.Contains(e.Message, `duplicate member "projectId"`) {
		t.Errorf("message = %q", e.Message)
	}
	if a.do("GET", "/v1/builds/"+buildA, "").status != 404 {
		t.Fatal("a document with a duplicate member was stored")
	}
	ra := newReportAPI(t, false)
	e = wantError(t, ra.do("POST", "/api/assessment/submit", `{"a":{"b":1,"b":2}}`), 400, "invalid")
	if !strings.Contains(e.Message, `duplicate member "b" in the object at $.a`) {
		t.Errorf("nested: message = %q", e.Message)
	}
}

func TestStrictJSON_MemberNamesAreCaseSensitive(t *testing.T) {
	a := newTestAPI(t, nil)
	body := strings.Replace(docJSON(buildA, "p"), `"projectId"`, `"ProjectId"`, 1)
	e := wantError(t, a.do("PUT", "/v1/builds/"+buildA, body), 400, "invalid")
	if !strings.Contains(e.Message, `"ProjectId"`) || !strings.Contains(e.Message, `did you mean "projectId"`) {
		t.Errorf("message = %q", e.Message)
	}
	if a.do("GET", "/v1/builds/"+buildA, "").status != 404 {
		t.Fatal("a document with a miscased member was stored")
	}
}

func TestStrictJSON_CheckJSONShapePaths(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":[{"c":1},{"c":2,"c":3}]}`: `duplicate member "c" in the object at $.b[1]`,
		`{"a":{"x":[1,2]},"a":2}`:             `duplicate member "a" in the object at $`,
		`{"a":{"a":1},"b":{"a":1}}`:           "",
		`[{"k":1},{"k":1}]`:                   "",
	} {
		err := checkJSONShape([]byte(in), DefaultMaxJSONDepth)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) || (want == "" && got != "") {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
}

func TestGuard_CrossSiteFormPostRefused(t *testing.T) {
	ra := newReportAPI(t, false)
	// A browser form posting cross-site: form content type, foreign Origin.
	r := ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "x=1",
		"Content-Type: application/x-www-form-urlencoded", "Origin: https://evil.example", "Sec-Fetch-Site: cross-site")
	wantError(t, r, http.StatusForbidden, EFORBIDDENORIGIN)
	// Without Origin headers (old browsers): the form content type alone is refused.
	r = ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "x=1", "Content-Type: application/x-www-form-urlencoded")
	wantError(t, r, http.StatusUnsupportedMediaType, EUNSUPPORTEDMEDIA)
	r = ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "", "Content-Type: text/plain")
	wantError(t, r, http.StatusUnsupportedMediaType, EUNSUPPORTEDMEDIA)
	// A JSON request from a foreign origin is refused too.
	r = ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "", "Origin: https://evil.example")
	wantError(t, r, http.StatusForbidden, EFORBIDDENORIGIN)
	// Same-origin and non-browser JSON requests pass.
	if r := ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", ""); r.status != 200 {
		t.Fatalf("plain JSON request: %d %s", r.status, r.body)
	}
	// Reads are not state-changing: no Content-Type needed.
	if r := ra.do("GET", "/v1/queues/report:queue/stats", "", "Origin: https://evil.example"); r.status != 200 {
		t.Fatalf("cross-origin GET: %d %s", r.status, r.body)
	}
}

func TestGuard_HostCheckStopsDNSRebinding(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) { c.AllowedHosts = LoopbackHosts("127.0.0.1:8080", nil) })
	wantError(t, a.do("GET", "/v1/builds", "", "Host: attacker.example"), http.StatusMisdirectedRequest, EHOSTNOTALLOWED)
	wantError(t, a.do("GET", "/v1/builds", "", "Host: attacker.example:8080"), http.StatusMisdirectedRequest, EHOSTNOTALLOWED)
	for _, host := range []string{"localhost:8080", "127.0.0.1", "[::1]:9", "LOCALHOST"} {
		if r := a.do("GET", "/v1/builds", "", "Host: "+host); r.status != 200 {
			t.Errorf("Host %s: %d %s", host, r.status, r.body)
		}
	}
}

func TestGuard_CORSForConfiguredOrigins(t *testing.T) {
	ra := newReportAPI(t, false)
	a := newTestAPI(t, func(c *Config, d *Deps) {
		c.CORSOrigins = []string{"https://ops.example.com"}
		d.Reports, d.Queues = ra.svc, func(string) *queue.Admin { return ra.svc.Admin() }
	})
	pre := a.do("OPTIONS", "/v1/queues/report:queue/dead/requeue-all", "",
		"Origin: https://ops.example.com", "Access-Control-Request-Method: POST")
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != "https://ops.example.com" ||
		!strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	r := a.do("POST", "/v1/queues/report:queue/dead/requeue-all", "", "Origin: https://ops.example.com", "Sec-Fetch-Site: cross-site")
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://ops.example.com" {
		t.Fatalf("allowed origin: %d %s %v", r.status, r.body, r.header)
	}
	r = a.do("POST", "/v1/queues/report:queue/dead/requeue-all", "", "Origin: https://other.example.com")
	wantError(t, r, http.StatusForbidden, EFORBIDDENORIGIN)
	if _, err := New(Config{CORSOrigins: []string{"ops.example.com"}}, Deps{Builds: a.store}); err == nil {
		t.Fatal("an origin without scheme was accepted")
	}
}

func TestAuth_FailedAttemptsThrottledPerClient(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) {
		c.Tokens = []config.Token{{Name: "reader", Token: "reader-secret-0123456789", Roles: []string{"read"}}}
		c.FailedAuthPerMinute = 5
	})
	for i := range 5 {
		wantError(t, a.do("GET", "/v1/builds", "", "Authorization: Bearer guess-"+string(rune('a'+i))), 401, "unauthorized")
	}
	r := a.do("GET", "/v1/builds", "", "Authorization: Bearer guess-f")
	wantError(t, r, http.StatusTooManyRequests, ETOOMANYREQUESTS)
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After = %q", ra)
	}
	// While throttled even the right token waits: guessing must not be able to tell.
	wantError(t, a.do("GET", "/v1/builds", "", "Authorization: Bearer reader-secret-0123456789"), http.StatusTooManyRequests, ETOOMANYREQUESTS)
}

func TestAuth_RefusedWithoutDrainingTheBody(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) {
		c.Tokens = []config.Token{{Name: "writer", Token: "writer-secret-0123456789", Roles: []string{"write"}}}
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Announce 100 KB (under the server's drain threshold) and send none of it.
	_, _ = conn.Write([]byte("PUT /v1/builds/" + buildA + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
		"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"))
	// A hang guard, not a timing assertion: draining would wait for the body forever.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer while the announced body is outstanding: %v", err)
	}
	if res.StatusCode != http.StatusUnauthorized || !res.Close {
		t.Fatalf("status %d, close %v; want 401 and the connection closed", res.StatusCode, res.Close)
	}
}

// noRedirects is a client that returns redirects instead of following them.
func noRedirects(a *testAPI) *http.Client {
	c := *a.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func TestEveryResponseIsJSON_RedirectsToo(t *testing.T) {
	a := newTestAPI(t, nil)
	redirected := 0
	for _, path := range []string{"/v1/projects/../builds", "/v1//builds", "/v1/./builds"} {
		req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
		req.URL.Opaque = path // keep the unclean path as sent
		res, err := noRedirects(a).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 512)
		n, _ := res.Body.Read(body)
		_ = res.Body.Close()
		if res.StatusCode < 300 || res.StatusCode > 399 {
			continue // not redirected: then it is an ordinary JSON answer, checked elsewhere
		}
		redirected++
		var e errorBody
		if res.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body[:n], &e) != nil || e.Code != ERedirect || res.Header.Get("Location") == "" {
			t.Errorf("%s: %d %s %q", path, res.StatusCode, res.Header.Get("Content-Type"), body[:n])
		}
	}
	if redirected == 0 {
		t.Fatal("no path was redirected; the test checks nothing")
	}
}

func TestProjectIDs_ThatCannotBeListedAreRefused(t *testing.T) {
	a := newTestAPI(t, nil)
	for _, p := range []string{"/", ".", "..", "  ", " lead", "trail ", "/abs", "dir/"} {
		doc := docJSON(buildA, p)
		e := wantError(t, a.do("PUT", "/v1/builds/"+buildA, doc), 400, "invalid")
		if !strings.Contains(e.Message, "projectId") {
			t.Errorf("%q: %s", p, e.Message)
		}
	}
	// Ids with inner slashes or spaces stay valid and listable.
	for _, p := range []string{"a/b", "team x", "a/../b"} {
		doc := docJSON(buildA, p)
		_ = a.do("DELETE", "/v1/builds/"+buildA, "")
		if r := a.do("PUT", "/v1/builds/"+buildA, doc); r.status != 200 {
			t.Fatalf("%q: %d %s", p, r.status, r.body)
		}
		r := a.do("GET", "/v1/projects/"+url.PathEscape(p)+"/builds", "")
		if r.status != 200 || !strings.Contains(string(r.body), buildA) {
			t.Errorf("%q not listable: %d %s", p, r.status, r.body)
		}
	}
}
