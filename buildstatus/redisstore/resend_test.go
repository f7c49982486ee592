package redisstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redistest"
)

// The tests of this file stall Redis longer than the client's read timeout while one write is
// on its way, so that go-redis sends it again and both copies run when Redis continues
// (redistest.RunStalled), and check what the copy does and answers.

// stalledStore returns a store on a server that RunStalled can stall, through its re-sending
// client.
func stalledStore(t *testing.T) (*redistest.Server, buildstatus.Store) {
	t.Helper()
	srv := redistest.StartStandalone(t)
	return srv, mustNew(t, srv.ResendClient(t), time.Hour)
}

// isScript is the stall's trigger: the save and delete scripts.
func isScript(c redis.Cmder) bool { return c.Name() == "evalsha" }

// wantCopy fails unless clients sent the script and its copy during the stall.
func wantCopy(t *testing.T, runs int) {
	t.Helper()
	if runs != 2 {
		t.Fatalf("clients sent %d scripts during the stall, want 2 (the call and the client's copy)", runs)
	}
}

// TestResend_ConditionalSavesAreTheirOwn: the copy of a save with If-Match found the document
// it had written (another ETag) and the copy of a create (If-None-Match) found the build it had
// created: both answered 412 for a write that took effect. Now they answer as the first copy.
func TestResend_ConditionalSavesAreTheirOwn(t *testing.T) {
	srv, s := stalledStore(t)
	ctx := context.Background()
	if _, err := s.Save(ctx, storetest.SampleDoc(storetest.NewBuildID(), ""), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err) // loads the script
	}
	id := storetest.NewBuildID()
	var b *buildstatus.Build
	var err error
	runs := srv.RunStalled(t, isScript, func() {
		b, err = s.Save(ctx, storetest.SampleDoc(id, ""), buildstatus.SaveOptions{IfNoneMatch: true})
	}, "evalsha")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	wantCopy(t, runs)
	next := storetest.SampleDoc(id, "")
	next.Status = "FAILED"
	runs = srv.RunStalled(t, isScript, func() {
		b, err = s.Save(ctx, next, buildstatus.SaveOptions{IfMatch: b.ETag()})
	}, "evalsha")
	if err != nil {
		t.Fatalf("update with If-Match: %v", err)
	}
	wantCopy(t, runs)
	got, err := s.Get(ctx, id)
	if err != nil || got.ETag() != b.ETag() {
		t.Fatalf("stored %v, %v; want the update (ETag %s)", got, err, b.ETag())
	}
}

// TestResend_DeleteIsItsOwn: the copy of a delete found no build and answered 404 for a
// delete that took effect. Now it answers as the first copy, and publishes nothing more.
func TestResend_DeleteIsItsOwn(t *testing.T) {
	srv, s := stalledStore(t)
	ctx := context.Background()
	ids := []string{storetest.NewBuildID(), storetest.NewBuildID()}
	for _, id := range ids {
		if _, err := s.Save(ctx, storetest.SampleDoc(id, ""), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, ids[0], ""); err != nil {
		t.Fatal(err) // loads the script
	}
	var err error
	runs := srv.RunStalled(t, isScript, func() { err = s.Delete(ctx, ids[1], "") }, "evalsha")
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, ids[1]); !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("Get after the delete: %v, want ENOTFOUND", err)
	}
	wantCopy(t, runs)
}

// TestResend_UnconditionalSaveRepeatsItsEvent: an unconditional save sent twice writes the same
// document twice and publishes it twice: a watcher sees the same document, with the same ETag,
// a second time, which tells it nothing changed.
func TestResend_UnconditionalSaveRepeatsItsEvent(t *testing.T) {
	srv, s := stalledStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := storetest.NewBuildID()
	if _, err := s.Save(ctx, storetest.SampleDoc(id, ""), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	events, err := s.Watch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	next := storetest.SampleDoc(id, "")
	next.Status = "FAILED"
	var b *buildstatus.Build
	runs := srv.RunStalled(t, isScript, func() { b, err = s.Save(ctx, next, buildstatus.SaveOptions{}) }, "evalsha")
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	var seen []string
	for len(seen) < 2 {
		select {
		case ev := <-events:
			if ev.Type == buildstatus.EventSaved {
				seen = append(seen, ev.ETag)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("events %v, want the save's event twice", seen)
		}
	}
	if !slices.Equal(seen, []string{b.ETag(), b.ETag()}) {
		t.Fatalf("events' ETags %v, want %s twice", seen, b.ETag())
	}
	wantCopy(t, runs)
}
