package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

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
	return serveSSE(s, w, r, func(ctx context.Context) (sseSource[buildstatus.Event], error) {
		events, err := s.builds.Watch(ctx, id)
		if err != nil {
			return sseSource[buildstatus.Event]{}, err
		}
		first, err := s.builds.Get(ctx, id)
		if err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) {
			return sseSource[buildstatus.Event]{}, err
		}
		bs := &buildStream{s: s, ctx: ctx, id: id}
		return sseSource[buildstatus.Event]{
			open:   func(st *sseWriter) { bs.state(st, first) },
			events: events,
			event:  bs.change,
		}, nil
	})
}

// buildStream is the state of one build's event stream.
type buildStream struct {
	s   *server
	ctx context.Context
	id  string
	// last is the ETag of the document the client has last been sent ("" when none).
	last string
}

// change writes the events of one change of the build; false ends the stream.
func (b *buildStream) change(st *sseWriter, ev buildstatus.Event) bool {
	switch ev.Type {
	case buildstatus.EventSaved:
		if ev.ETag == b.last {
			return true // the change is already in the snapshot just sent (it was committed between Watch and Get)
		}
		st.event(buildstatus.EventSaved, ev.ETag, ev.Build)
		b.last = ev.ETag
	case buildstatus.EventDeleted:
		st.event(buildstatus.EventDeleted, "", b.idJSON())
		b.last = ""
	case buildstatus.EventGap:
		st.event(buildstatus.EventGap, "", b.idJSON())
		doc, err := b.s.builds.Get(b.ctx, b.id)
		if err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) {
			b.s.logger.LogAttrs(b.ctx, slog.LevelWarn, "SSE re-read after gap failed",
				slog.String("request_id", requestInfoOf(b.ctx).id), slog.Any("error", err))
			return false // ending the stream makes the client reconnect and re-read
		}
		b.state(st, doc)
	}
	return true
}

// state sends the current value: a snapshot of doc, or missing when doc is nil.
func (b *buildStream) state(st *sseWriter, doc *buildstatus.Build) {
	if doc == nil {
		st.event(sseMissing, "", b.idJSON())
		b.last = ""
		return
	}
	st.event(sseSnapshot, doc.ETag(), doc.JSON)
	b.last = doc.ETag()
}

// idJSON is the data of events without a document: {"buildId":"<id>"}.
func (b *buildStream) idJSON() []byte {
	data, _ := json.Marshal(struct {
		BuildID string `json:"buildId"`
	}{b.id})
	return data
}
