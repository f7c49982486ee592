package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/config"
)

// uiTestAPI is a test server with its *server, for the dashboard stream's tests.
type uiTestAPI struct {
	*testAPI
	s *server
	// overview is what the Overview dependency answers (set with setOverview).
	mu       sync.Mutex
	overview string
	saves    int
}

// newUITestAPI starts a server with an Overview whose version the test sets.
func newUITestAPI(t *testing.T, mutate func(*Config)) *uiTestAPI {
	t.Helper()
	store := memstore.New(memstore.Options{TTL: time.Hour})
	t.Cleanup(func() { _ = store.Close() })
	reg := prometheus.NewRegistry()
	a := &uiTestAPI{overview: "v1"}
	cfg := Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg, Gatherer: reg, HeartbeatInterval: time.Hour}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := New(cfg, Deps{Builds: store, Overview: func(context.Context) Overview {
		a.mu.Lock()
		defer a.mu.Unlock()
		return Overview{Version: a.overview, Redis: RedisOverview{Mode: "memory", LatencyMS: float64(time.Now().UnixNano())}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a.testAPI = &testAPI{t: t, srv: srv, store: store, reg: reg}
	a.s = h.(*server)
	return a
}

// save stores a new version of build id (its estimatedTime counts the saves).
func (a *uiTestAPI) save(id string) {
	a.t.Helper()
	a.mu.Lock()
	a.saves++
	n := a.saves
	a.mu.Unlock()
	doc := strings.Replace(docJSON(id, "p1"), `"estimatedTime":15`, `"estimatedTime":`+strconv.Itoa(n), 1)
	if r := a.do("PUT", "/v1/builds/"+id, doc); r.status != http.StatusOK {
		a.t.Fatalf("PUT %s: %d %s", id, r.status, r.body)
	}
}

func (a *uiTestAPI) setOverview(v string) {
	a.mu.Lock()
	a.overview = v
	a.mu.Unlock()
}

// uiChangeEvent is one parsed change event.
type uiChangeEvent struct {
	Topic   string `json:"topic"`
	Version string `json:"version"`
	id      string
}

// openUI opens GET /v1/ui/events with the topics and headers ("Name: value") and returns the
// status and the change events (closed when the stream ends or ctx does).
func (a *uiTestAPI) openUI(ctx context.Context, topics []string, headers ...string) (int, <-chan uiChangeEvent) {
	a.t.Helper()
	q := url.Values{"topic": topics}
	req, err := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/v1/ui/events?"+q.Encode(), nil)
	if err != nil {
		a.t.Fatal(err)
	}
	for _, h := range headers {
		if h == "" {
			continue
		}
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(name, strings.TrimSpace(value))
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	out := make(chan uiChangeEvent, 64)
	if res.StatusCode != http.StatusOK {
		_ = res.Body.Close()
		close(out)
		return res.StatusCode, out
	}
	raw := make(chan sseEvent, 64)
	go readSSE(res.Body, raw)
	go func() {
		defer close(out)
		for ev := range raw {
			if ev.name != uiEventChange {
				continue
			}
			var c uiChangeEvent
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				a.t.Errorf("change event data %q: %v", ev.data, err)
				return
			}
			c.id = ev.id
			out <- c
		}
	}()
	return res.StatusCode, out
}

// readSSE parses an event stream into events (comments as name ":") until it ends.
func readSSE(body io.ReadCloser, out chan<- sseEvent) {
	defer close(out)
	defer body.Close()
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	var ev sseEvent
	for {
		n, err := body.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for {
			i := strings.IndexByte(string(buf), '\n')
			if i < 0 {
				break
			}
			line := string(buf[:i])
			buf = buf[i+1:]
			switch {
			case line == "":
				if ev != (sseEvent{}) {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ev.name = ":"
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
		if err != nil {
			return
		}
	}
}

// nextChange returns the next change event (failing the test if the stream ends first or
// nothing arrives within a minute: a hang, not a deadline of the stream).
func nextChange(t *testing.T, events <-chan uiChangeEvent) uiChangeEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(time.Minute):
		t.Fatal("no change event")
	}
	return uiChangeEvent{}
}

const uiBuildA = "0a000000-0000-4000-8000-000000000001"
const uiBuildB = "0b000000-0000-4000-8000-000000000002"

// TestUIEvents_MultiplexesTopics: one stream announces each topic once when it opens, then
// each topic's own changes, and only that topic's: a build saved is announced on its build
// topic (driven by the store's events), the overview's change on the overview topic (polled).
func TestUIEvents_MultiplexesTopics(t *testing.T) {
	a := newUITestAPI(t, func(c *Config) { c.DashboardPollInterval = 10 * time.Millisecond })
	a.save(uiBuildA)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	status, events := a.openUI(ctx, []string{"build:" + uiBuildA, "overview"})
	if status != http.StatusOK {
		t.Fatalf("status %d, want 200", status)
	}
	got := map[string]bool{}
	for range 2 {
		got[nextChange(t, events).Topic] = true
	}
	if !got["build:"+uiBuildA] || !got["overview"] {
		t.Fatalf("opening announcements = %v, want both topics", got)
	}
	a.save(uiBuildA)
	if ev := nextChange(t, events); ev.Topic != "build:"+uiBuildA {
		t.Fatalf("after a save: change of %q, want the build's topic", ev.Topic)
	}
	a.setOverview("v2")
	if ev := nextChange(t, events); ev.Topic != "overview" {
		t.Fatalf("after the overview changed: change of %q, want overview", ev.Topic)
	}
}

// TestUIEvents_ThrottleCoalescesABurst: while a topic's throttle holds (the minimum gap after
// a change), any number of changes make one announcement when it lifts, of the last state.
func TestUIEvents_ThrottleCoalescesABurst(t *testing.T) {
	a := newUITestAPI(t, func(c *Config) { c.DashboardUpdatesPerSecond = 1 })
	held := make(chan struct{}, 16)
	release := make(chan struct{})
	a.s.ui.wait = func(ctx context.Context, d time.Duration) bool {
		held <- struct{}{}
		select {
		case <-release:
			return true
		case <-ctx.Done():
			return false
		}
	}
	a.save(uiBuildA)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, events := a.openUI(ctx, []string{"build:" + uiBuildA})
	first := nextChange(t, events)
	a.save(uiBuildA)
	<-held // the first save's event reached the watcher, within the gap after the opening announcement
	for range 50 {
		a.save(uiBuildA)
	}
	release <- struct{}{}
	burst := nextChange(t, events)
	<-held // the saves' events after the probe wait for the gap again; their state is already announced
	release <- struct{}{}
	a.save(uiBuildA)
	<-held
	release <- struct{}{}
	after := nextChange(t, events)
	v := func(ev uiChangeEvent) int {
		n, err := strconv.Atoi(ev.Version)
		if err != nil {
			t.Fatalf("version %q: %v", ev.Version, err)
		}
		return n
	}
	if v(burst) != v(first)+1 || v(after) != v(burst)+1 {
		t.Fatalf("versions %s, %s, %s: want one announcement for the 51 saves of the burst and one for the save after it", first.Version, burst.Version, after.Version)
	}
}

// TestUIEvents_ResumeSendsOnlyWhatChanged: a stream opened with the last event's id
// (Last-Event-ID) announces only the topics that changed since, even when its topics stopped
// in between (nobody listened).
func TestUIEvents_ResumeSendsOnlyWhatChanged(t *testing.T) {
	a := newUITestAPI(t, nil)
	a.save(uiBuildA)
	a.save(uiBuildB)
	topics := []string{"build:" + uiBuildA, "build:" + uiBuildB}
	ctx, cancel := context.WithCancel(t.Context())
	_, events := a.openUI(ctx, topics)
	nextChange(t, events)
	last := nextChange(t, events)
	cancel()
	waitFor(t, "the topics to stop once their only stream closed", func() bool { return a.s.ui.running() == 0 })

	a.save(uiBuildB)
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	_, events = a.openUI(ctx, topics, "Last-Event-ID: "+last.id)
	if ev := nextChange(t, events); ev.Topic != "build:"+uiBuildB { // build A (sorted first) is not announced again
		t.Fatalf("first change after resuming: %q, want only the changed build:%s", ev.Topic, uiBuildB)
	}
	a.save(uiBuildA)
	if ev := nextChange(t, events); ev.Topic != "build:"+uiBuildA {
		t.Fatalf("after build A changed: %q, want build:%s", ev.Topic, uiBuildA)
	}

	// A token of another process (or none) announces every topic.
	_, fresh := a.openUI(ctx, topics, "Last-Event-ID: 0123~build%3A"+uiBuildA+"=1")
	got := map[string]bool{nextChange(t, fresh).Topic: true, nextChange(t, fresh).Topic: true}
	if len(got) != 2 {
		t.Fatalf("a foreign token: announced %v, want both topics", got)
	}
}

// TestUIEvents_Bounds: unknown topics, too many topics and admin topics without the admin role
// are refused; a stream counts against the per-client event stream bound; the topics of
// closed streams stop.
func TestUIEvents_Bounds(t *testing.T) {
	a := newUITestAPI(t, func(c *Config) {
		c.Tokens = []config.Token{
			{Name: "reader", Token: "token-read-0123456789", Roles: []string{"read"}},
			{Name: "admin", Token: "token-admin-0123456789", Roles: []string{"admin"}},
		}
		c.MaxEventStreamsPerClient, c.DashboardMaxTopics = 1, 2
	})
	read, admin := "Authorization: Bearer token-read-0123456789", "Authorization: Bearer token-admin-0123456789"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, c := range []struct {
		topics []string
		header string
		want   int
	}{
		{nil, read, http.StatusBadRequest},
		{[]string{"nope"}, read, http.StatusBadRequest},
		{[]string{"build:not-a-uuid"}, read, http.StatusBadRequest},
		{[]string{"queue"}, read, http.StatusBadRequest},
		{[]string{"overview", "builds", "build:" + uiBuildA}, read, http.StatusBadRequest},
		{[]string{"queues"}, read, http.StatusForbidden},
		{[]string{"executor", "overview"}, read, http.StatusForbidden},
		{[]string{"overview"}, "", http.StatusUnauthorized},
	} {
		if status, _ := a.openUI(ctx, c.topics, c.header); status != c.want {
			t.Errorf("topics %v: status %d, want %d", c.topics, status, c.want)
		}
	}
	status, events := a.openUI(ctx, []string{"overview", "overview"}, read) // a repeated topic counts once
	if status != http.StatusOK {
		t.Fatalf("status %d, want 200", status)
	}
	nextChange(t, events)
	if status, _ := a.openUI(ctx, []string{"builds"}, read); status != http.StatusTooManyRequests {
		t.Errorf("a second stream of one token: status %d, want 429 (server.max-event-streams-per-client 1)", status)
	}
	status, events = a.openUI(ctx, []string{"queues", "overview"}, admin)
	if status != http.StatusOK {
		t.Fatalf("admin topics with the admin role: status %d, want 200", status)
	}
	nextChange(t, events)
	cancel()
	waitFor(t, "every topic to stop once no stream listens", func() bool { return a.s.ui.running() == 0 })
}
