package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/redstate/redstate"
)

// Error codes of the request guard.
const (
	// EFORBIDDENORIGIN: a state-changing request came from a browser page of another origin that
	// is not in server.cors.allowed-origins (cross-site request forgery defence). HTTP 403.
	EFORBIDDENORIGIN = "forbidden_origin"
	// EHOSTNOTALLOWED: the Host header names a host this server does not serve (DNS-rebinding
	// defence on a loopback listener). HTTP 421.
	EHOSTNOTALLOWED = "host_not_allowed"
)

// corsMaxAge is how long browsers may cache a preflight answer, in seconds.
const corsMaxAge = "600"

// corsAllowHeaders are the request headers a cross-origin caller may send.
const corsAllowHeaders = "Authorization, Content-Type, If-Match, If-None-Match, X-Request-Id, Last-Event-ID"

// corsExposeHeaders are the response headers a cross-origin caller may read.
const corsExposeHeaders = "ETag, X-Request-Id, Retry-After, Location"

// guard is the first check of every request: the Host allow-list (loopback listeners), CORS for
// the configured origins and the cross-origin (CSRF) check. The JSON Content-Type rule for
// state-changing requests (checkContentType) runs once a route matched, so unknown routes and
// methods are still answered 404 and 405.
type guard struct {
	hosts   []string // lower-case host names without port; empty: any Host
	origins []string // exact origins allowed for CORS, e.g. "https://ops.example.com"
	csrf    *http.CrossOriginProtection
}

// newGuard validates the allowed origins and builds the guard.
func newGuard(hosts, origins []string) (*guard, error) {
	g := &guard{csrf: http.NewCrossOriginProtection()}
	for _, h := range hosts {
		g.hosts = append(g.hosts, strings.ToLower(strings.Trim(h, "[]")))
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return nil, fmt.Errorf("httpapi: CORS origin %q must be scheme://host[:port], e.g. https://ops.example.com", o)
		}
		if err := g.csrf.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("httpapi: CORS origin %q: %w", o, err)
		}
		g.origins = append(g.origins, o)
	}
	return g, nil
}

// check applies the guard to r. It returns done=true when it has answered the request itself
// (a CORS preflight); otherwise a non-nil error is the answer to send.
func (g *guard) check(w http.ResponseWriter, r *http.Request) (done bool, err error) {
	if !g.hostAllowed(r.Host) {
		return false, redstate.Errorf(EHOSTNOTALLOWED,
			"host %q is not served here; this server answers only %s (add it to server.allowed-hosts)",
			truncate(r.Host), strings.Join(g.hosts, ", "))
	}
	origin := r.Header.Get("Origin")
	allowed := origin != "" && slices.Contains(g.origins, origin)
	if allowed {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return true, nil
		}
	}
	if err := g.csrf.Check(r); err != nil {
		return false, redstate.Errorf(EFORBIDDENORIGIN,
			"cross-origin request refused (Origin %q); allow the origin in server.cors.allowed-origins if this is intended",
			truncate(origin))
	}
	return false, nil
}

// checkContentType enforces the JSON rule for state-changing requests (POST, PUT, PATCH,
// DELETE): one that carries a body, or declares a Content-Type, must declare application/json.
// A request with neither needs no type: nothing in it is interpreted. An HTML form always sends
// a form or text type, so cross-site form posts are refused even by browsers that send no
// Origin; bodyless cross-site requests are refused by guard.check (see docs/security.md).
// Errors: EUNSUPPORTEDMEDIA.
func checkContentType(r *http.Request) error {
	if !changesState(r.Method) {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && !hasBody(r) {
		return nil
	}
	if !isJSONMediaType(ct) {
		return unsupportedMedia(ct)
	}
	return nil
}

// hostAllowed reports whether the Host header names an allowed host (any port).
func (g *guard) hostAllowed(hostport string) bool {
	if len(g.hosts) == 0 {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	return slices.Contains(g.hosts, host)
}

// changesState reports whether a method may change state (everything but GET, HEAD, OPTIONS).
func changesState(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// hasBody reports whether a request announces a body.
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

// LoopbackHosts returns the Host names a loopback listener on addr answers to: localhost,
// 127.0.0.1, ::1 and addr's own host, plus extra. Any other Host header is refused, so a web
// page whose name was re-bound to 127.0.0.1 (DNS rebinding) cannot read the API.
func LoopbackHosts(addr string, extra []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" && !slices.Contains(hosts, h) {
		hosts = append(hosts, h)
	}
	for _, e := range extra {
		if !slices.Contains(hosts, e) {
			hosts = append(hosts, e)
		}
	}
	return hosts
}
