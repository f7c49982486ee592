package feed_test

import (
	"context"
	"flag"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestMain stops the SQL servers the tests start, and points the examples at a private
// redis-server (see redistest.RunWithStandalone).
func TestMain(m *testing.M) {
	code := redistest.RunWithStandalone(m, func(addr string) { redisAddr = addr })
	sqltest.Stop()
	os.Exit(code)
}

// clock is a test clock advancing 1 ms per reading.
type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time { return time.UnixMilli(c.ms.Add(1)).UTC() }

// caches are the caches the property runs on.
func caches(t *testing.T) map[string]func() feed.Cache {
	out := map[string]func() feed.Cache{"memory": func() feed.Cache { return memfeed.New() }}
	if !testing.Short() {
		client := redistest.StartStandalone(t).Client(t)
		out["redis"] = func() feed.Cache { return redisfeed.New(client, redstate.Prefix("", feedtest.UniquePrefix())) }
	}
	return out
}

// TestProperty_UnreadMatchesSQLInBothModes: random publish / follow / unfollow / read /
// mark-all-read histories with retries injected (a fan-out job run twice, a read repeated)
// end, for every user and author, with unread count == size of the unread list == the SQL
// truth, in fan-out and hybrid mode, on memory and Redis caches.
func TestProperty_UnreadMatchesSQLInBothModes(t *testing.T) {
	if fl := flag.Lookup("rapid.checks"); fl != nil && fl.Value.String() == "100" {
		_ = fl.Value.Set("200") // the issue asks for at least 200 histories
	}
	for _, engine := range sqltest.Engines {
		t.Run(engine.Name, func(t *testing.T) { propertyOnEngine(t, engine.Open(t)) })
	}
}

// propertyOnEngine runs the property on one SQL database, with every cache in both modes.
func propertyOnEngine(t *testing.T, db *sqldb.DB) {
	src, err := sqlfeed.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var base atomic.Int64 // ids never repeat across subtests: they share the SQL database
	base.Store(1_000_000)
	for name, newCache := range caches(t) {
		for _, mode := range []struct {
			name      string
			threshold int64
		}{{"fanout", 1 << 40}, {"hybrid", -1}} {
			t.Run(name+"/"+mode.name, func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					ctx := context.Background()
					c := &clock{}
					c.ms.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
					svc, err := feed.NewService(src, newCache(), feed.Options{HybridThreshold: mode.threshold, Now: c.now, FanOutBatch: 2})
					if err != nil {
						rt.Fatal(err)
					}
					off := base.Add(100)
					users := []int64{off + 1, off + 2, off + 3}
					authors := []int64{off + 11, off + 12}
					// Build every user's Redis state first, so the history below is kept up by
					// the incremental scripts (a rebuild at the end would hide their mistakes).
					for _, u := range users {
						if _, _, err := svc.UnreadCounts(ctx, u); err != nil {
							rt.Fatal(err)
						}
					}
					var posts []feed.Post
					steps := rapid.IntRange(1, 40).Draw(rt, "steps")
					for range steps {
						u := rapid.SampledFrom(users).Draw(rt, "user")
						a := rapid.SampledFrom(authors).Draw(rt, "author")
						switch rapid.IntRange(0, 6).Draw(rt, "op") {
						case 0, 1:
							p, err := svc.Publish(ctx, feed.Post{AuthorID: a, Title: "t"})
							if err != nil {
								rt.Fatal(err)
							}
							posts = append(posts, p)
						case 2:
							if _, err := svc.Follow(ctx, u, a); err != nil {
								rt.Fatal(err)
							}
						case 3:
							if _, err := svc.Unfollow(ctx, u, a); err != nil {
								rt.Fatal(err)
							}
						case 4:
							if len(posts) > 0 {
								p := rapid.SampledFrom(posts).Draw(rt, "post")
								for range rapid.IntRange(1, 2).Draw(rt, "read tries") {
									if err := svc.MarkRead(ctx, u, p.ID); err != nil {
										rt.Fatal(err)
									}
								}
							}
						case 5:
							if _, err := svc.MarkAuthorRead(ctx, u, a); err != nil {
								rt.Fatal(err)
							}
						case 6:
							if len(posts) > 0 { // a fan-out job delivered again
								if err := svc.FanOutPost(ctx, rapid.SampledFrom(posts).Draw(rt, "refanout").ID); err != nil {
									rt.Fatal(err)
								}
							}
						}
					}
					for _, u := range users {
						counts, total, err := svc.UnreadCounts(ctx, u)
						if err != nil {
							rt.Fatal(err)
						}
						var sum int64
						for _, a := range authors {
							truth, err := src.UnreadCount(ctx, u, a)
							if err != nil {
								rt.Fatal(err)
							}
							listed := 0
							var cur feed.Cursor
							for {
								page, err := svc.QueryPage(ctx, u, a, feed.StatusUnread, cur, 3)
								if err != nil {
									rt.Fatal(err)
								}
								listed += len(page.Posts)
								if !page.HasMore {
									break
								}
								cur = page.Next
							}
							if counts[a] != truth || int64(listed) != truth {
								rt.Fatalf("user %d author %d: count %d, listed %d, SQL %d", u, a, counts[a], listed, truth)
							}
							sum += truth
						}
						if total != sum {
							rt.Fatalf("user %d: total %d, want %d", u, total, sum)
						}
					}
				})
			})
		}
	}
}
