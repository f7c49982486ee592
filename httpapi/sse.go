package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// sseSource is what one Server-Sent Events stream sends: its opening events, then what each
// value of a channel means, and what to send again after every heartbeat.
type sseSource[E any] struct {
	// open writes the first events (the current state).
	open func(st *sseWriter)
	// events delivers the source's values; closing it ends the stream (the client reconnects).
	events <-chan E
	// event writes what ev means; false ends the stream.
	event func(st *sseWriter, ev E) bool
	// beat, when set, runs after each heartbeat comment.
	beat func(st *sseWriter)
	// stop, when set, ends the subscription when the stream ends.
	stop func()
}

// serveSSE answers r with an event stream: it admits the stream (see streamLimiter; the error
// is the handler's), calls start with the stream's context to subscribe to its source and read
// the current state (an error is the handler's, before any byte is sent), sends the headers
// (200, text/event-stream, no caching, no proxy buffering), lifts the server's deadlines and,
// unless r is a HEAD request, writes src.open; then, flushing after each step, it writes a
// ": ping" comment (and src.beat) every heartbeat and src.event for every value of
// src.events. It returns when ctx ends, the client goes away (a write or flush fails),
// src.events is closed or src.event returns false, and then cancels the context and calls
// src.stop.
func serveSSE[E any](s *server, w http.ResponseWriter, r *http.Request, start func(ctx context.Context) (sseSource[E], error)) error {
	release, err := s.streams.acquire(streamClient(r))
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	src, err := start(ctx)
	if err != nil {
		return err
	}
	if src.stop != nil {
		defer src.stop()
	}
	runSSE(ctx, s, w, r, src)
	return nil
}

// runSSE is serveSSE once the source is open: headers, opening events, then the loop.
func runSSE[E any](ctx context.Context, s *server, w http.ResponseWriter, r *http.Request, src sseSource[E]) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	liftDeadlines(ctx, rc, s.logger)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	st := &sseWriter{w: w, rc: rc}
	src.open(st)
	if st.flush() != nil {
		return
	}
	heartbeat := time.NewTicker(s.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			st.comment("ping")
			if src.beat != nil {
				src.beat(st)
			}
		case ev, ok := <-src.events:
			if !ok || !src.event(st, ev) {
				return
			}
		}
		if st.flush() != nil {
			return // the client went away
		}
	}
}

// sseWriter writes Server-Sent Events. Write errors are kept and reported by flush.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

// event writes one event. data is JSON and is compacted onto one line if needed.
func (s *sseWriter) event(name, id string, data []byte) {
	if bytes.ContainsAny(data, "\r\n") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err == nil {
			data = buf.Bytes()
		}
	}
	if s.err != nil {
		return
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", name)
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", id)
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) { // one line unless Compact failed
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		b.WriteString("\n")
	}
	b.WriteString("\n")
	_, s.err = s.w.Write(b.Bytes())
}

// comment writes an SSE comment line (ignored by clients; keeps proxies from timing out).
func (s *sseWriter) comment(text string) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, ": %s\n\n", text)
	}
}

// flush sends what was written and returns the first write error.
func (s *sseWriter) flush() error {
	if s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err
}

// liftDeadlines clears the server's read and write deadlines for a long-lived response (an
// event stream): server.read-timeout and server.write-timeout bound ordinary requests only.
// The read deadline matters too: when it passes, net/http's background read fails and cancels
// the request context.
func liftDeadlines(ctx context.Context, rc *http.ResponseController, logger *slog.Logger) {
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		logger.LogAttrs(ctx, slog.LevelWarn, "cannot clear the write deadline of an event stream", slog.Any("error", err))
	}
	if err := rc.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		logger.LogAttrs(ctx, slog.LevelWarn, "cannot clear the read deadline of an event stream", slog.Any("error", err))
	}
}
