package redisfeed_test

import (
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// The whole contract, pages right after fan-outs and read marks included, holds with unread
// pages read through the client-side cache: every write of unread sets ends with its barrier.
func TestCacheSuite_ClientCache(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			c := redisfeed.NewCached(topo.Client(t), redstate.KeyPrefix{}, redistest.NewCache(t, topo.Options(t)))
			feedtest.RunCacheSuite(t, func(*testing.T) feed.Cache { return c })
		})
	}
}

// TestClientCache_PagesSeeThisProcessesWritesAtOnce: a page read right after a fan-out or a
// read mark of this process shows it, every time (the barrier; without it the cached page of
// before the write is served until the invalidation arrives).
func TestClientCache_PagesSeeThisProcessesWritesAtOnce(t *testing.T) {
	srv := redistest.SharedStandalone(t)
	c := redisfeed.NewCached(srv.Client(t), redstate.Prefix("", feedtest.UniquePrefix()), redistest.NewCache(t, redisconn.Options{URL: srv.URL}))
	ctx := t.Context()
	const user, author = 1, 2
	base := time.Now().Add(-time.Hour)
	page := func() []feed.PostRef {
		refs, err := c.UnreadPage(ctx, user, author, feed.Cursor{}, 20)
		if err != nil {
			t.Fatal(err)
		}
		return refs
	}
	for i := int64(1); i <= 300; i++ {
		ref := feed.PostRef{ID: i, CreateTime: base.Add(time.Duration(i) * time.Millisecond)}
		page() // cache the page before the write
		if _, err := c.FanOut(ctx, author, ref, []int64{user}); err != nil {
			t.Fatal(err)
		}
		if got := page(); len(got) == 0 || got[0].ID != i {
			t.Fatalf("post %d: page right after the fan-out = %v", i, got)
		}
		if _, err := c.MarkRead(ctx, user, author, i); err != nil {
			t.Fatal(err)
		}
		if got := page(); len(got) != 0 {
			t.Fatalf("post %d: page right after the read mark = %v, want empty", i, got)
		}
	}
}
