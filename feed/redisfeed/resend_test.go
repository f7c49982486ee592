package redisfeed_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/redistest"
)

// The feed's Redis writes are idempotent as they are, so a command go-redis sends twice (Redis
// stalled longer than the read timeout; redistest.RunStalled) can only repeat what is
// harmless. These tests prove it for a notification, a fan-out and a read mark.

// TestResend_NotifyDuplicateIsHarmless: a notification PUBLISHed twice reaches the other
// instances twice. It carries only user ids, no counts, and a subscriber's signal only makes a
// live client re-read its counts (signals coalesce, one pending at most): the copy costs at
// most one more read and can never make a count wrong.
func TestResend_NotifyDuplicateIsHarmless(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := feedtest.UniquePrefix()
	receiver := redisfeed.NewNotifier(srv.Client(t), redstate.Prefix("", prefix), slog.New(slog.DiscardHandler))
	go func() { _ = receiver.Run(ctx) }()
	signal, stop := receiver.Subscribe(7)
	defer stop()
	raw := srv.Client(t).Subscribe(ctx, prefix+"feed:events")
	defer raw.Close()
	if _, err := raw.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	sender := redisfeed.NewNotifier(srv.ResendClient(t), redstate.Prefix("", prefix), nil)
	// Wait until the receiver is subscribed too, then drop the signal it sends every
	// subscriber once subscribed (if it came yet).
	admin := srv.Client(t)
	for admin.PubSubNumSub(ctx, prefix+"feed:events").Val()[prefix+"feed:events"] < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-signal:
	default:
	}
	var err error
	runs := srv.RunStalled(t, redistest.Named("publish"), func() { err = sender.Notify(ctx, []int64{7}) }, "publish")
	if err != nil {
		t.Fatalf("Notify: %v", err)
	}
	for i := range 2 {
		select {
		case m := <-raw.Channel():
			if m.Payload != "[7]" {
				t.Fatalf("message %q, want the user ids [7]", m.Payload)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d of the notification and its copy did not arrive", i+1)
		}
	}
	select {
	case <-signal:
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber was not signalled")
	}
	if runs != 2 {
		t.Fatalf("clients sent %d PUBLISH during the stall, want 2 (the notification and its copy)", runs)
	}
}

// TestResend_FanOutAndReadAreIdempotent: a fan-out (ZADD NX) and a read mark sent twice leave
// the follower's set as once: the post counted unread once, then read.
func TestResend_FanOutAndReadAreIdempotent(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := context.Background()
	c := redisfeed.New(srv.ResendClient(t), redstate.Prefix("", feedtest.UniquePrefix()))
	user, author := feedtest.ID(), feedtest.ID()
	ref := feed.PostRef{ID: feedtest.ID(), CreateTime: time.Now()}
	if _, err := c.FanOut(ctx, author, feed.PostRef{ID: feedtest.ID(), CreateTime: time.Now()}, []int64{feedtest.ID()}); err != nil {
		t.Fatal(err) // loads the script
	}
	var err error
	runs := srv.RunStalled(t, redistest.Named("evalsha"), func() { _, err = c.FanOut(ctx, author, ref, []int64{user}) }, "evalsha")
	if err != nil {
		t.Fatalf("FanOut: %v", err)
	}
	counts, err := c.UnreadCounts(ctx, user, []int64{author})
	if err != nil || counts[author] != 1 {
		t.Fatalf("unread %v, %v; want 1", counts, err)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d scripts during the stall, want 2", runs)
	}
	if _, err := c.MarkRead(ctx, feedtest.ID(), author, ref.ID); err != nil {
		t.Fatal(err) // loads the script
	}
	runs = srv.RunStalled(t, redistest.Named("evalsha"), func() { _, err = c.MarkRead(ctx, user, author, ref.ID) }, "evalsha")
	if err != nil {
		t.Fatalf("MarkRead: %v", err)
	}
	counts, err = c.UnreadCounts(ctx, user, []int64{author})
	if err != nil || counts[author] != 0 {
		t.Fatalf("unread %v, %v; want 0", counts, err)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d scripts during the stall, want 2", runs)
	}
}
