package feed_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/sqldb/sqltest"
)

func TestFanOutJob_NewAndPreSplitForms(t *testing.T) {
	payload, err := feed.FanOutPayload(42)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := queue.EncodeMessage(queue.NewMessage(time.Now(), payload))
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(raw, &wire); err != nil || string(wire["Payload"]) != `{"postId":42}` {
		t.Fatalf("encoded %s", raw)
	}
	for _, raw := range []string{
		string(raw),
		`{"RecordId":42,"RetryCount":1,"EnqueueTime":"2025-01-15T10:30:00","JobId":"j1"}`, // enqueued before the split
	} {
		m, err := queue.DecodeMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if post, err := feed.DecodeFanOutJob(m); err != nil || post != 42 {
			t.Errorf("DecodeFanOutJob(%s) = %d, %v", raw, post, err)
		}
	}
	for _, raw := range []string{
		`{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`,
		`{"RecordId":0,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`,
		`{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","Payload":{"postId":"x"}}`,
	} {
		m, _ := queue.DecodeMessage([]byte(raw))
		if err := feed.CheckFanOutJob(m); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("CheckFanOutJob(%s) = %v, want EINVALID", raw, err)
		}
	}
	if _, err := feed.FanOutPayload(0); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("FanOutPayload(0) = %v", err)
	}
}

// TestFanOutHandler_PreSplitJobFansOut: a fan-out job LPUSHed in the pre-split format
// ({"RecordId":<post id>,…}, as an older redstate enqueued it) and still waiting after an
// upgrade is consumed by the fan-out worker and fans the post out; so is a current one.
func TestFanOutHandler_PreSplitJobFansOut(t *testing.T) {
	ctx := context.Background()
	src, err := sqlfeed.New(ctx, sqltest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	b := memqueue.NewBroker(memqueue.Options{})
	const q = "feed:fanout"
	enqueue, err := feed.FanOutEnqueuer(b, q)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := feed.NewService(src, memfeed.New(), feed.Options{Logger: quiet, Enqueue: enqueue})
	if err != nil {
		t.Fatal(err)
	}
	const viewer, author = 1, 2
	if _, err := svc.Follow(ctx, viewer, author); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.UnreadCounts(ctx, viewer); err != nil { // the viewer's cache is built: from now on only fan-outs count
		t.Fatal(err)
	}
	old, err := src.CreatePost(ctx, feed.Post{AuthorID: author, Title: "before the upgrade"})
	if err != nil {
		t.Fatal(err)
	}
	legacy := `{"RecordId":` + strconv.FormatInt(old.ID, 10) + `,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","JobId":"j1"}`
	if err := b.EnqueueRaw(ctx, q, legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Publish(ctx, feed.Post{AuthorID: author, Title: "after the upgrade"}); err != nil { // enqueues a current job
		t.Fatal(err)
	}
	w, err := queue.NewWorker(b, feed.FanOutHandler(svc), queue.WorkerSettings{Queue: q, Check: feed.CheckFanOutJob, Logger: quiet,
		BlockTimeout: 50 * time.Millisecond, PromoteInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := b.Stats(ctx, q)
		if err == nil && st == (queue.Stats{}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fan-out jobs not done: %+v, %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	counts, _, err := svc.UnreadCounts(ctx, viewer)
	if err != nil || counts[author] != 2 {
		t.Fatalf("unread counts = %v, %v; want 2 posts of author %d (both jobs fanned out)", counts, err, author)
	}
}
