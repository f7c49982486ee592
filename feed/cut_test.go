package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// cutSource is a Source whose MarkRead commits and then reports the caller's context as ended
// (cancelling it first), as the SQLite driver does when the context ends while it commits.
type cutSource struct {
	feed.Source
	cancel context.CancelFunc
}

func (c cutSource) MarkRead(ctx context.Context, user, post int64, at time.Time) (bool, error) {
	if _, err := c.Source.MarkRead(context.WithoutCancel(ctx), user, post, at); err != nil {
		return false, err
	}
	c.cancel()
	return false, ctx.Err()
}

// TestMarkRead_CommittedButCutIsRepaired: a read mark whose SQL write committed although it
// reported the ended context (the caller went away) reaches Redis through a repair mark. Before
// the fix nothing marked it, so Redis kept the post unread while SQL had it read (found by the
// chaos harness: an extra unread entry of an active follower after a phase ended).
func TestMarkRead_CommittedButCutIsRepaired(t *testing.T) {
	bg := context.Background()
	store, err := sqlfeed.New(bg, sqltest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	svc, err := feed.NewService(cutSource{Source: store, cancel: cancel}, memfeed.New(), feed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Follow(bg, 2, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.UnreadCounts(bg, 2); err != nil { // builds the follower's state
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the post is created after the follow
	p, err := svc.Publish(bg, feed.Post{AuthorID: 1, Title: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.MarkRead(ctx, 2, p.ID); err == nil {
		t.Fatal("MarkRead: want the ended context's error")
	}
	if _, err := svc.RepairOnce(bg); err != nil {
		t.Fatal(err)
	}
	if d, err := svc.VerifyUser(bg, 2); err != nil || len(d) > 0 {
		t.Fatalf("after the repair: drift %+v, %v; want none (SQL has the read mark)", d, err)
	}
}
