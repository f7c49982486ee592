package httpapi

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// noType sends a request without a Content-Type header (see testAPI.do).
const noType = "Content-Type:"

// TestGuard_BodylessRequestsNeedNoContentType: a state-changing request without a body may
// leave Content-Type out (curl -X PUT $B/v1/feed/users/2001/following/1001, as the
// README's example does); one with a body, or one that declares another type, is still 415.
func TestGuard_BodylessRequestsNeedNoContentType(t *testing.T) {
	ra := newReportAPI(t, false)
	if r := ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "", noType); r.status != 200 {
		t.Fatalf("bodyless POST without Content-Type: %d %s", r.status, r.body)
	}
	if r := ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "", noType, "Sec-Fetch-Site: same-origin"); r.status != 200 {
		t.Fatalf("bodyless same-origin browser POST without Content-Type: %d %s", r.status, r.body)
	}
	if r := ra.do("DELETE", "/v1/queues/report:queue/dead", "", noType, "Sec-Fetch-Site: same-origin"); r.status != 200 {
		t.Fatalf("bodyless DELETE without Content-Type: %d %s", r.status, r.body)
	}
	// A route that needs a body says what is missing: the body, not a type.
	e := wantError(t, ra.do("PUT", "/v1/builds/"+buildA, "", noType), http.StatusBadRequest, "invalid")
	if !strings.Contains(e.Message, "body is empty") {
		t.Errorf("bodyless PUT of a build: message %q", e.Message)
	}
	// A body still needs the JSON type, and a declared type must be JSON even without a body
	// (an empty text/plain or form post is what an HTML form sends).
	wantError(t, ra.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"), noType), http.StatusUnsupportedMediaType, EUNSUPPORTEDMEDIA)
	wantError(t, ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "", "Content-Type: application/x-www-form-urlencoded"),
		http.StatusUnsupportedMediaType, EUNSUPPORTEDMEDIA)
	wantError(t, ra.do("DELETE", "/v1/queues/report:queue/dead", "", "Content-Type: text/plain"), http.StatusUnsupportedMediaType, EUNSUPPORTEDMEDIA)
	if got := chunkedEmptyPost(t, ra.testAPI); got != http.StatusUnsupportedMediaType {
		t.Fatalf("empty chunked POST without Content-Type: %d, want 415 (a chunked body is a body)", got)
	}
}

// TestGuard_BodylessCrossSiteRequestsRefused: without a body and a Content-Type, the Origin,
// Sec-Fetch-Site and Host checks alone refuse cross-site requests, for every state-changing
// method (a cross-site page can send a bodyless POST with fetch(url, {method: "POST", mode:
// "no-cors"}) or navigator.sendBeacon(url), with no Content-Type and no preflight).
func TestGuard_BodylessCrossSiteRequestsRefused(t *testing.T) {
	ra := newReportAPI(t, false)
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		for _, h := range [][]string{
			{"Origin: https://evil.example"},
			{"Sec-Fetch-Site: cross-site"},
			{"Sec-Fetch-Site: same-site", "Origin: https://sub.127.0.0.1"},
			{"Origin: null"}, // an opaque origin (sandboxed frame, data: URL)
		} {
			r := ra.do(method, "/v1/queues/report:queue/dead/requeue-all", "", append([]string{noType}, h...)...)
			if r.status != http.StatusForbidden {
				t.Errorf("%s with %v: %d %s, want 403", method, h, r.status, r.body)
				continue
			}
			wantError(t, r, http.StatusForbidden, EFORBIDDENORIGIN)
		}
	}
	h := newTestAPI(t, func(c *Config, _ *Deps) { c.AllowedHosts = LoopbackHosts("127.0.0.1:8080", nil) })
	wantError(t, h.do("DELETE", "/v1/builds/"+buildA, "", noType, "Host: rebound.example"), http.StatusMisdirectedRequest, EHOSTNOTALLOWED)
}

// chunkedEmptyPost sends POST requeue-all with a chunked body of zero bytes and no
// Content-Type, on a raw connection (net/http's client would send Content-Length: 0), and
// returns the status.
func chunkedEmptyPost(t *testing.T, a *testAPI) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("POST /v1/queues/report:queue/dead/requeue-all HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
		"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"))
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}
