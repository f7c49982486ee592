package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/resilience"
)

// requestInfo is what the middleware learns about a request while it is served. The route
// wrapper fills in route and token; the outer middleware logs and measures with them.
type requestInfo struct {
	id    string // X-Request-Id
	route string // matched mux pattern, "" when no route matched
	token string // name of the token that authenticated the request
	// unavailable is the error of a 503 answer (writeError: an unavailable store, or a client
	// that went away), logged on the request's line.
	unavailable error
}

type requestInfoKey struct{}

// requestInfoOf returns the request's info (an empty one outside ServeHTTP).
func requestInfoOf(ctx context.Context) *requestInfo {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
}

// ServeHTTP runs the middleware chain: request id, logging and metrics, panic recovery, then
// the mux (whose route wrapper does authentication).
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &requestInfo{id: requestID(r)}
	w.Header().Set("X-Request-Id", info.id)
	rec := &recorder{ResponseWriter: w, s: s, info: info}
	r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
	rec.req = r
	defer s.finish(rec, r, start)
	defer s.recoverPanic(rec, r)
	done, err := s.guard.check(rec, r)
	switch {
	case done:
		return
	case err != nil:
		info.route = routeGuarded
		s.writeError(rec, r, err)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// recoverPanic turns a handler panic into a 500 JSON response (if the response has not
// started) and logs it with its stack. http.ErrAbortHandler is passed on.
func (s *server) recoverPanic(rec *recorder, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
		slog.String("request_id", rec.info.id), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
	if rec.status == 0 {
		s.writeError(rec, r, redstate.Wrap(redstate.EINTERNAL, fmt.Errorf("panic: %v", v), "internal error"))
	}
}

// finish logs the request and records its metrics. Probes and scrapes log at Debug level, and
// so do requests refused by an open circuit breaker: the breaker logs the outage (when it
// starts, a summary of the calls refused every 10 s, when it ends), so an outage does not log
// a line per request. Other 503s (an unavailable store, a client that went away) log at Warn
// with their error.
func (s *server) finish(rec *recorder, r *http.Request, start time.Time) {
	d := time.Since(start)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	route := rec.info.route
	if route == "" {
		route = routeUnmatched
	}
	s.metrics.observe(route, r.Method, status, d)

	level := slog.LevelInfo
	unavailable := rec.info.unavailable
	switch {
	case unavailable != nil && resilience.IsRefused(unavailable):
		level = slog.LevelDebug
	case unavailable != nil:
		level = slog.LevelWarn
	case status >= 500:
		level = slog.LevelError
	case route == "GET /healthz" || route == "GET /readyz" || route == "GET /metrics":
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("request_id", rec.info.id),
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.String("path", r.URL.EscapedPath()),
		slog.Int("status", status),
		slog.Duration("duration", d),
		slog.Int64("bytes", rec.bytes),
	}
	if rec.info.token != "" {
		attrs = append(attrs, slog.String("token", rec.info.token))
	}
	if unavailable != nil {
		attrs = append(attrs, slog.Any("error", unavailable))
	}
	s.logger.LogAttrs(r.Context(), level, "http request", attrs...)
}

// requestID returns the client's X-Request-Id when it is short printable ASCII, else a new
// random id.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 &&
		!strings.ContainsFunc(id, func(c rune) bool { return c <= ' ' || c > '~' }) {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recorder wraps the ResponseWriter to record status and size, and to turn the mux's plain-text
// 404 and 405 answers for unmatched requests into JSON errors.
type recorder struct {
	http.ResponseWriter
	s        *server
	req      *http.Request
	info     *requestInfo
	status   int
	bytes    int64
	swallow  bool // discard the body the mux writes after a replaced 404/405
	replaced bool // a JSON error is being written in place of the mux's answer
}

// WriteHeader implements http.ResponseWriter.
func (w *recorder) WriteHeader(code int) {
	if w.status != 0 || code < 200 {
		w.ResponseWriter.WriteHeader(code) // 1xx, or a superfluous call net/http reports
		return
	}
	if w.info.route == "" && !w.replaced && isRedirect(code) {
		// The mux redirects to a cleaned path with an HTML body; answer JSON instead, keeping
		// the status and the Location header.
		w.replaced = true
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Del("Content-Length")
		w.status = code
		w.ResponseWriter.WriteHeader(code)
		body, _ := json.Marshal(errorBody{Code: ERedirect, Message: "the canonical path of this resource is " + h.Get("Location")})
		n, _ := w.ResponseWriter.Write(body)
		w.bytes += int64(n)
		w.swallow = true
		return
	}
	if w.info.route == "" && !w.replaced && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		w.replaced, w.swallow = true, false
		var err error
		if code == http.StatusNotFound {
			err = redstate.Errorf(redstate.ENOTFOUND, "no route for %s %s", w.req.Method, truncate(w.req.URL.EscapedPath()))
		} else {
			err = redstate.Errorf(EMETHODNOTALLOWED, "method %s is not allowed on %s (allowed: %s)",
				w.req.Method, truncate(w.req.URL.EscapedPath()), w.Header().Get("Allow"))
		}
		w.s.writeError(w, w.req, err)
		w.swallow = true
		return
	}
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *recorder) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
		if w.swallow {
			return len(b), nil
		}
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher.
func (w *recorder) Flush() { _ = w.FlushError() }

// FlushError flushes and reports failure (used by http.ResponseController).
func (w *recorder) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer (write deadlines, flushing).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isRedirect reports whether code is a redirect status the mux sends for unclean paths.
func isRedirect(code int) bool {
	return code == http.StatusMovedPermanently || code == http.StatusTemporaryRedirect || code == http.StatusPermanentRedirect
}

// truncate shortens client-supplied text quoted in messages.
func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
