package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/redstate/redstate"
)

// uiEventChange is the SSE event of GET /v1/ui/events: a topic changed.
const uiEventChange = "change"

// uiEvents streams the dashboard's topics as Server-Sent Events: GET /v1/ui/events?topic=…
// (repeated; see uiSourceOf for the topics and the role each needs).
//
// Each event is "change" with data {"topic","version"}: the topic's state differs from what
// the stream announced before, and the page reads it again through the API. When the stream
// opens, every topic is announced once, except those whose version the client already has: a
// reconnecting EventSource sends the last event's id (the resume token: the versions it was
// sent) as Last-Event-ID, a new one may pass it as ?since=. So a client that re-reads on every
// change it receives is current after a drop too. A topic announces at most
// Config.DashboardUpdatesPerSecond changes a second (changes in between coalesce), and a slow
// client only ever has one pending change per topic. A ": ping" comment is sent every
// heartbeat.
func (s *server) uiEvents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	keys := q["topic"]
	if len(keys) == 0 {
		return redstate.Errorf(redstate.EINVALID, "name at least one topic (?topic=queues&topic=executor); topics: %s", uiTopicList)
	}
	srcs := make(map[string]uiSource, len(keys))
	need := roleRead
	for _, k := range keys {
		if _, dup := srcs[k]; dup {
			continue
		}
		src, role, err := s.uiSourceOf(k)
		if err != nil {
			return err
		}
		srcs[k], need = src, max(need, role)
	}
	if len(srcs) > s.uiMaxTopics {
		return redstate.Errorf(redstate.EINVALID, "a stream may name at most %d topics (server.dashboard-max-topics), got %d", s.uiMaxTopics, len(srcs))
	}
	if need > roleRead {
		if _, err := s.authorize(w, r, need); err != nil {
			return err
		}
	}
	tok := r.Header.Get("Last-Event-ID")
	if tok == "" {
		tok = q.Get("since")
	}
	since := s.ui.parseUIToken(tok)
	return serveSSE(s, w, r, func(ctx context.Context) (sseSource[struct{}], error) {
		sub := s.ui.subscribe(srcs, since)
		return sseSource[struct{}]{
			open:   func(st *sseWriter) { s.writeUIChanges(st, sub) },
			events: sub.wake,
			event: func(st *sseWriter, _ struct{}) bool {
				s.writeUIChanges(st, sub)
				return true
			},
			stop: func() { s.ui.unsubscribe(sub) },
		}, nil
	})
}

// writeUIChanges writes a change event per pending topic of sub; each carries the resume
// token of everything sent so far as its id.
func (s *server) writeUIChanges(st *sseWriter, sub *uiSub) {
	for _, c := range s.ui.take(sub) {
		data, _ := json.Marshal(struct {
			Topic   string `json:"topic"`
			Version string `json:"version"`
		}{c.topic, strconv.FormatUint(c.version, 10)})
		st.event(uiEventChange, s.ui.token(sub), data)
	}
}
