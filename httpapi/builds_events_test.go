package httpapi

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
)

// sseEvent is one parsed Server-Sent Event (comments are reported with name ":").
type sseEvent struct {
	name, id, data string
}

// openEvents connects to the build's event stream and returns its parsed events. The stream
// closes when ctx ends.
func (a *testAPI) openEvents(ctx context.Context, id string) (*http.Response, <-chan sseEvent) {
	a.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/v1/builds/"+id+"/events", nil)
	if err != nil {
		a.t.Fatal(err)
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	out := make(chan sseEvent, 16)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
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
	}()
	return res, out
}

// next returns the next event that is not a comment.
func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev.name != ":" {
				return ev
			}
		case <-timeout:
			t.Fatal("no event within 5s")
		}
	}
}

func TestEvents_SnapshotThenChanges(t *testing.T) {
	a := newTestAPI(t, nil)
	etag := a.put(buildA, "p")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, events := a.openEvents(ctx, buildA)
	for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	ev := next(t, events)
	if ev.name != "snapshot" || ev.id != etag || !strings.Contains(ev.data, `"buildId":"`+buildA+`"`) {
		t.Fatalf("first event = %+v", ev)
	}

	changed := strings.Replace(docJSON(buildA, "p"), "IN_PROGRESS", "SUCCESS", 1)
	put := a.do("PUT", "/v1/builds/"+buildA, changed)
	ev = next(t, events)
	if ev.name != "saved" || `"`+ev.id+`"` != put.header.Get("ETag") || ev.data != string(put.body) {
		t.Fatalf("saved event = %+v, PUT ETag %s", ev, put.header.Get("ETag"))
	}

	a.do("DELETE", "/v1/builds/"+buildA, "")
	ev = next(t, events)
	if ev.name != "deleted" || ev.data != `{"buildId":"`+buildA+`"}` {
		t.Fatalf("deleted event = %+v", ev)
	}
	cancel()
	for range events { // drains, then closes once the client is gone
	}
}

func TestEvents_MissingThenCreatedAndHeartbeat(t *testing.T) {
	a := newTestAPI(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := a.openEvents(ctx, buildB)
	if ev := next(t, events); ev.name != "missing" || ev.data != `{"buildId":"`+buildB+`"}` {
		t.Fatalf("first event = %+v", ev)
	}
	// A ping comment arrives within a few heartbeat intervals (50ms in tests).
	deadline := time.After(5 * time.Second)
	for ping := false; !ping; {
		select {
		case ev := <-events:
			ping = ev.name == ":"
		case <-deadline:
			t.Fatal("no ping")
		}
	}
	etag := a.put(buildB, "p")
	if ev := next(t, events); ev.name != "saved" || ev.id != etag {
		t.Fatalf("saved event = %+v", ev)
	}
}

// watchSpy records the context of each Watch.
type watchSpy struct {
	buildstatus.Store
	ctxs chan context.Context
}

func (w *watchSpy) Watch(ctx context.Context, id string) (<-chan buildstatus.Event, error) {
	w.ctxs <- ctx
	return w.Store.Watch(ctx, id)
}

func TestEvents_StopWhenClientLeaves(t *testing.T) {
	spy := &watchSpy{ctxs: make(chan context.Context, 1)}
	a := newTestAPI(t, func(_ *Config, d *Deps) { spy.Store = d.Builds; d.Builds = spy })
	ctx, cancel := context.WithCancel(context.Background())
	_, events := a.openEvents(ctx, buildA)
	next(t, events)
	watchCtx := <-spy.ctxs
	cancel()
	select {
	case <-watchCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription outlived the client")
	}
}

func TestEvents_SurviveServerWriteTimeout(t *testing.T) {
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = store.Close() })
	h, err := New(Config{Logger: loggerTo(io.Discard), HeartbeatInterval: 20 * time.Millisecond}, Deps{Builds: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	a := &testAPI{t: t, srv: srv, store: store}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := a.openEvents(ctx, buildA)
	next(t, events)
	time.Sleep(300 * time.Millisecond) // longer than WriteTimeout: the deadline must be cleared
	etag := a.put(buildA, "p")
	if ev := next(t, events); ev.name != "saved" || ev.id != etag {
		t.Fatalf("event after the write timeout = %+v", ev)
	}
}

// replayWatch is a Store whose Watch first delivers an event for the value already stored, as
// happens when a write commits between the subscription and the snapshot read.
type replayWatch struct{ buildstatus.Store }

func (w replayWatch) Watch(ctx context.Context, id string) (<-chan buildstatus.Event, error) {
	in, err := w.Store.Watch(ctx, id)
	if err != nil {
		return nil, err
	}
	cur, err := w.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(chan buildstatus.Event, 1)
	out <- buildstatus.Event{Type: buildstatus.EventSaved, BuildID: id, ETag: cur.ETag(), Build: cur.JSON}
	go func() {
		defer close(out)
		for ev := range in {
			out <- ev
		}
	}()
	return out, nil
}

func TestEvents_ChangeAlreadyInSnapshotIsNotRepeated(t *testing.T) {
	a := newTestAPI(t, func(_ *Config, d *Deps) { d.Builds = replayWatch{d.Builds} })
	etag := a.put(buildA, "p")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := a.openEvents(ctx, buildA)
	if ev := next(t, events); ev.name != "snapshot" || ev.id != etag {
		t.Fatalf("first event = %+v", ev)
	}
	changed := strings.Replace(docJSON(buildA, "p"), "IN_PROGRESS", "SUCCESS", 1)
	put := a.do("PUT", "/v1/builds/"+buildA, changed)
	if ev := next(t, events); ev.name != "saved" || `"`+ev.id+`"` != put.header.Get("ETag") {
		t.Fatalf("after the snapshot the stream sent %+v; the snapshot's own change must not be repeated", ev)
	}
}
