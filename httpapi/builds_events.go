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

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// SSE event names sent by GET /v1/builds/{buildId}/events, besides buildstatus.EventSaved,
// EventDeleted and EventGap.
const (
	// sseSnapshot carries the current document when the stream starts (and after a gap).
	sseSnapshot = "snapshot"
	// sseMissing says the build does not exist when the stream starts (and after a gap).
	sseMissing = "missing"
)

// buildEvents streams a build's changes as Server-Sent Events: GET /v1/builds/{buildId}/events.
//
// It subscribes first and reads the current value second, so no change between the two is
// lost. The first event is "snapshot" (id = ETag, data = document) or "missing"
// (data = {"buildId":...}). Then each change is "saved" (id = ETag, data = document),
// "deleted" (data = {"buildId":...}) or "gap" (events were dropped; data = {"buildId":...}),
// and a gap is followed by a fresh snapshot/missing. A ": ping" comment is sent every
// heartbeat interval. The stream ends when the client goes away or the store ends it.
func (s *server) buildEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pathBuildID(r)
	if err != nil {
		return err
	}
	release, err := s.streams.acquire(streamClient(r))
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events, err := s.builds.Watch(ctx, id)
	if err != nil {
		return err
	}
	first, err := s.builds.Get(ctx, id)
	if err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) {
		return err
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	liftDeadlines(ctx, rc, s.logger)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	st := &sseWriter{w: w, rc: rc, id: id}
	st.state(first)
	if st.flush() != nil {
		return nil
	}

	heartbeat := time.NewTicker(s.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			st.comment("ping")
		case ev, ok := <-events:
			if !ok {
				return nil // the store ended the stream; the client reconnects
			}
			switch ev.Type {
			case buildstatus.EventSaved:
				if ev.ETag == st.last {
					continue // the change is already in the snapshot just sent (it was committed between Watch and Get)
				}
				st.event(buildstatus.EventSaved, ev.ETag, ev.Build)
				st.last = ev.ETag
			case buildstatus.EventDeleted:
				st.event(buildstatus.EventDeleted, "", st.idJSON())
				st.last = ""
			case buildstatus.EventGap:
				st.event(buildstatus.EventGap, "", st.idJSON())
				b, err := s.builds.Get(ctx, id)
				if err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) {
					s.logger.LogAttrs(ctx, slog.LevelWarn, "SSE re-read after gap failed",
						slog.String("request_id", requestInfoOf(ctx).id), slog.Any("error", err))
					return nil // ending the stream makes the client reconnect and re-read
				}
				st.state(b)
			default:
				continue
			}
		}
		if st.flush() != nil {
			return nil // the client went away
		}
	}
}

// sseWriter writes Server-Sent Events. Write errors are kept and reported by flush.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	id  string
	err error
	// last is the ETag of the document the client has last been sent ("" when none).
	last string
}

// state sends the current value: a snapshot of b, or missing when b is nil.
func (s *sseWriter) state(b *buildstatus.Build) {
	if b == nil {
		s.event(sseMissing, "", s.idJSON())
		s.last = ""
		return
	}
	s.event(sseSnapshot, b.ETag(), b.JSON)
	s.last = b.ETag()
}

// idJSON is the data of events without a document: {"buildId":"<id>"}.
func (s *sseWriter) idJSON() []byte {
	data, _ := json.Marshal(struct {
		BuildID string `json:"buildId"`
	}{s.id})
	return data
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
