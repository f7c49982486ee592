package cli

import (
	"context"
	"net/http"
	"strings"
)

// streamCloser ends long-lived streaming responses (Server-Sent Events) when shutdown starts,
// while ordinary in-flight requests keep their context and run to completion.
//
// Every request gets a cancellable context. When the handler starts a response whose
// Content-Type is text/event-stream, that context is tied to the closer's base context, so
// cancelling the base (Close) ends the stream's handler, which returns and lets
// http.Server.Shutdown finish instead of waiting out its timeout.
type streamCloser struct {
	base   context.Context
	cancel context.CancelFunc
}

func newStreamCloser() *streamCloser {
	base, cancel := context.WithCancel(context.Background())
	return &streamCloser{base: base, cancel: cancel}
}

// Close ends every current stream and every stream started from now on.
func (s *streamCloser) Close() { s.cancel() }

// Wrap returns next with streaming responses made closable.
func (s *streamCloser) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		sw := &streamWriter{ResponseWriter: w, onStream: func() {
			stop := context.AfterFunc(s.base, cancel)
			context.AfterFunc(ctx, func() { stop() })
		}}
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// streamWriter calls onStream once if the response turns out to be an event stream.
type streamWriter struct {
	http.ResponseWriter
	onStream    func()
	wroteHeader bool
}

// WriteHeader implements http.ResponseWriter.
func (w *streamWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 {
		w.wroteHeader = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.onStream()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *streamWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (w *streamWriter) Flush() { _ = w.FlushError() }

// FlushError flushes and reports failure (used by http.ResponseController).
func (w *streamWriter) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer (deadlines, flushing).
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
