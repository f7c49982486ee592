package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redstate/redstate/buildstatus"
)

func (s suite) watchTests() []namedTest {
	return []namedTest{
		{"DeliversChangesInOrder", s.testWatchInOrder},
		{"ClosesWhenContextEnds", s.testWatchCloses},
		{"SlowSubscriberGetsGapWritersNeverBlock", s.testWatchSlowSubscriber},
	}
}

// recv returns the next event, failing on timeout or a closed channel.
func recv(t *testing.T, ch <-chan buildstatus.Event) buildstatus.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed early")
		}
		return ev
	case <-time.After(waitFor):
		t.Fatalf("no event within %v", waitFor)
	}
	return buildstatus.Event{}
}

// wantSaved checks that ev announces b.
func wantSaved(t *testing.T, ev buildstatus.Event, b *buildstatus.Build, what string) {
	t.Helper()
	if ev.Type != buildstatus.EventSaved || ev.BuildID != b.MustDoc().BuildID || ev.ETag != b.ETag() || !bytes.Equal(ev.Build, b.JSON) {
		t.Fatalf("event for %s = {%s %s %s %s}, want {saved %s %s %s}", what, ev.Type, ev.BuildID, ev.ETag, ev.Build, b.MustDoc().BuildID, b.ETag(), b.JSON)
	}
}

// drainClosed waits until ch is closed, discarding events.
func drainClosed(t *testing.T, ch <-chan buildstatus.Event) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch channel still open %v after its context ended", waitFor)
		}
	}
}

func (s suite) testWatchInOrder(t *testing.T) {
	st := s.store(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	id, other := NewBuildID(), NewBuildID()
	ch, err := st.Watch(ctx, id)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	mustSave(t, st, SampleDoc(other, "p")) // another build's change is not delivered
	saved := mustSave(t, st, SampleDoc(id, "p"))
	updated, err := st.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "ios", Status: "SUCCESS", Progress: ptr(100)}, "")
	if err != nil {
		t.Fatalf("UpdatePlatform: %v", err)
	}
	if err := st.Delete(ctx, id, ""); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantSaved(t, recv(t, ch), saved, "Save")
	wantSaved(t, recv(t, ch), updated, "UpdatePlatform")
	if ev := recv(t, ch); ev.Type != buildstatus.EventDeleted || ev.BuildID != id {
		t.Fatalf("event for Delete = %+v, want deleted %s", ev, id)
	}
	cancel()
	drainClosed(t, ch)
}

func (s suite) testWatchCloses(t *testing.T) {
	st := s.store(t)
	ctx, cancel := context.WithCancel(t.Context())
	id := NewBuildID()
	ch, err := st.Watch(ctx, id)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	// A second watcher of the same build keeps working after the first ends.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	ch2, err := st.Watch(ctx2, id)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	cancel()
	drainClosed(t, ch)
	saved := mustSave(t, st, SampleDoc(id, "p"))
	wantSaved(t, recv(t, ch2), saved, "Save after the other watcher ended")

	// A watch whose context has already ended closes at once.
	done, cancelDone := context.WithCancel(t.Context())
	cancelDone()
	if ch3, err := st.Watch(done, id); err == nil {
		drainClosed(t, ch3)
	}
}

// testWatchSlowSubscriber writes many changes while the watcher reads nothing: writers
// must not block, and the watcher must then see the changes in order, with an EventGap wherever
// it missed some.
func (s suite) testWatchSlowSubscriber(t *testing.T) {
	const writes = 300
	st := s.store(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	id := NewBuildID()
	ch, err := st.Watch(ctx, id)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	start := time.Now()
	var last *buildstatus.Build
	for i := range writes {
		doc := SampleDoc(id, "p")
		doc.EstimatedTime = ptr(int64(i))
		last = mustSave(t, st, doc)
	}
	if d := time.Since(start); d > waitFor {
		t.Fatalf("%d writes with an idle watcher took %v: writers block on slow watchers", writes, d)
	}

	prev := int64(-1)
	saved, gaps := 0, 0
	gapSinceSaved := false
	for {
		// After a gap the stream may legitimately fall silent: the watcher re-reads the build.
		quiet := 2 * time.Second
		if gapSinceSaved {
			quiet = 500 * time.Millisecond
		}
		var ev buildstatus.Event
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("watch channel closed early")
			}
			ev = e
		case <-time.After(quiet):
			if gapSinceSaved {
				if b := mustGet(t, st, id); b.ETag() != last.ETag() {
					t.Fatalf("re-read after the gap found ETag %s, want the last write's %s", b.ETag(), last.ETag())
				}
				return // the final changes were dropped and announced by a gap
			}
			t.Fatalf("after %d saved events and %d gaps, the last change was neither delivered nor announced by a gap", saved, gaps)
		}
		switch ev.Type {
		case buildstatus.EventGap:
			gaps++
			gapSinceSaved = true
		case buildstatus.EventSaved:
			var doc buildstatus.PublishResponse
			if err := json.Unmarshal(ev.Build, &doc); err != nil || doc.EstimatedTime == nil {
				t.Fatalf("saved event carries %q: %v", ev.Build, err)
			}
			n := *doc.EstimatedTime
			if n <= prev {
				t.Fatalf("saved events out of order: %d after %d", n, prev)
			}
			if n != prev+1 && !gapSinceSaved {
				t.Fatalf("changes %d..%d were dropped without an EventGap", prev+1, n-1)
			}
			prev, gapSinceSaved = n, false
			saved++
			if ev.ETag == last.ETag() {
				if n != writes-1 {
					t.Fatalf("last ETag carried by change %d", n)
				}
				return
			}
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
}
