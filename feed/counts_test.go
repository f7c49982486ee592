package feed_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// followedAuthors is how many authors the viewer of the counting tests follows.
const followedAuthors = 200

// countsEnv is a viewer (1) following followedAuthors authors (1001…), each with one post, and
// 20 authors without posts (3001…), on SQLite behind a counting Source.
type countsEnv struct {
	src  *countingSource
	opts feed.Options
}

func newCountsEnv(t *testing.T, opts feed.Options) *countsEnv {
	t.Helper()
	store, err := sqlfeed.New(context.Background(), sqltest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	e := &countsEnv{src: &countingSource{src: store}, opts: opts}
	svc := e.service(t, memfeed.New())
	ctx := context.Background()
	for a := int64(1001); a < 1001+followedAuthors; a++ {
		must[bool](t)(svc.Follow(ctx, 1, a))
		must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: a, Title: "p"}))
	}
	for a := int64(3001); a <= 3020; a++ {
		must[bool](t)(svc.Follow(ctx, 1, a))
	}
	return e
}

func (e *countsEnv) service(t *testing.T, cache feed.Cache) *feed.Service {
	t.Helper()
	svc, err := feed.NewService(e.src, cache, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// sqlCallsOf runs UnreadCounts of viewer 1 and returns how many SQL calls it made.
func (e *countsEnv) sqlCallsOf(t *testing.T, svc *feed.Service) int64 {
	t.Helper()
	before := e.src.calls()
	counts, total, err := svc.UnreadCounts(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != followedAuthors || total != followedAuthors {
		t.Fatalf("UnreadCounts = %d authors, total %d; want %d, %d", len(counts), total, followedAuthors, followedAuthors)
	}
	return e.src.calls() - before
}

// TestUnreadCounts_HybridCostsConstantSQL: the SQL cost of counts does not grow with the authors
// followed. One UnreadCounts call of a viewer who follows 200 hybrid authors (and 20 without posts)
// makes one SQL query, not one per author.
func TestUnreadCounts_HybridCostsConstantSQL(t *testing.T) {
	e := newCountsEnv(t, feed.Options{HybridThreshold: -1}) // every author is hybrid
	svc := e.service(t, memfeed.New())
	e.sqlCallsOf(t, svc) // builds the viewer's state and the author indexes
	if n := e.sqlCallsOf(t, svc); n != 1 {
		t.Fatalf("UnreadCounts of a viewer following %d hybrid authors made %d SQL queries; want 1", followedAuthors, n)
	}
}

// TestUnreadCounts_DegradedCostsConstantSQL: answered from SQL (Redis down), one UnreadCounts call
// makes one SQL query whatever the number of followed authors.
func TestUnreadCounts_DegradedCostsConstantSQL(t *testing.T) {
	e := newCountsEnv(t, feed.Options{})
	svc := e.service(t, downCache{memfeed.New()})
	if n := e.sqlCallsOf(t, svc); n != 1 {
		t.Fatalf("degraded UnreadCounts of a viewer following %d authors made %d SQL queries; want 1", followedAuthors, n)
	}
}

// downCache is a Cache whose reads of a user's state fail as an unreachable Redis does.
type downCache struct{ feed.Cache }

func (downCache) Built(context.Context, int64) (bool, error) {
	return false, redstate.Errorf(redstate.EUNAVAILABLE, "redis down")
}

func (downCache) UnreadCounts(context.Context, int64, []int64) (map[int64]int64, error) {
	return nil, redstate.Errorf(redstate.EUNAVAILABLE, "redis down")
}

// TestUnreadCounts_SubscribedViewerCostsNoSQLUntilChange: while the viewer is subscribed (a live
// counts stream), repeated UnreadCounts calls (its heartbeats) make no SQL query after the first
// answer; a follow through another instance (sharing the notifier, as instances share Redis
// Pub/Sub) is seen at the next call.
func TestUnreadCounts_SubscribedViewerCostsNoSQLUntilChange(t *testing.T) {
	for _, mode := range []struct {
		name      string
		threshold int64
	}{{"fanout", 1 << 40}, {"hybrid", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			notifier := feed.NewLocalNotifier()
			e := newCountsEnv(t, feed.Options{HybridThreshold: mode.threshold, Notifier: notifier})
			cache := memfeed.New()
			svc, other := e.service(t, cache), e.service(t, cache)
			signal, unsubscribe := svc.Subscribe(1)
			defer unsubscribe()
			e.sqlCallsOf(t, svc)
			for i := range 20 {
				if n := e.sqlCallsOf(t, svc); n != 0 {
					t.Fatalf("call %d with nothing changed made %d SQL queries; want 0", i, n)
				}
			}
			ctx := context.Background()
			must[bool](t)(other.Unfollow(ctx, 1, 1001))
			must[bool](t)(other.Follow(ctx, 1, 1001))
			must[feed.Post](t)(other.Publish(ctx, feed.Post{AuthorID: 1001, Title: "q"}))
			// As the live stream does: re-read on every signal and heartbeat until it shows.
			deadline := time.After(10 * time.Second)
			heartbeat := time.NewTicker(20 * time.Millisecond)
			defer heartbeat.Stop()
			for {
				select {
				case <-signal:
				case <-heartbeat.C:
				case <-deadline:
					t.Fatal("a follow on another instance did not reach the subscribed viewer's counts")
				}
				counts, total, err := svc.UnreadCounts(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				if counts[1001] == 1 && total == followedAuthors {
					return
				}
			}
		})
	}
}

// TestUnreadCounts_FollowCacheUnderConcurrentChanges: streams subscribing and leaving, re-reads
// and follows / unfollows / reads on two instances, all at once; afterwards a subscribed
// viewer's counts equal SQL's.
func TestUnreadCounts_FollowCacheUnderConcurrentChanges(t *testing.T) {
	notifier := feed.NewLocalNotifier()
	store, err := sqlfeed.New(context.Background(), sqltest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	cache := memfeed.New()
	newService := func() *feed.Service {
		svc, err := feed.NewService(store, cache, feed.Options{HybridThreshold: 1, Notifier: notifier})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	a, b := newService(), newService()
	ctx := context.Background()
	const viewer = 1
	authors := []int64{11, 12, 13, 14}
	must[bool](t)(a.Follow(ctx, 2, 13)) // 13 and 14 have two followers: hybrid
	must[bool](t)(a.Follow(ctx, 2, 14))
	signal, unsubscribe := a.Subscribe(viewer)
	defer unsubscribe()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 { // streams coming and going, re-reading on every signal
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				sig, stop := a.Subscribe(viewer)
				for range 5 {
					select {
					case <-sig:
					case <-time.After(time.Millisecond):
					}
					if _, _, err := a.UnreadCounts(ctx, viewer); err != nil {
						t.Error(err)
					}
				}
				stop()
			}
		}()
	}
	for i := range 60 { // changes on both instances
		svc := []*feed.Service{a, b}[i%2]
		author := authors[i%len(authors)]
		switch i % 3 {
		case 0:
			_, err = svc.Follow(ctx, viewer, author)
		case 1:
			_, err = svc.Publish(ctx, feed.Post{AuthorID: author, Title: "p"})
		case 2:
			if i%4 == 0 {
				_, err = svc.Unfollow(ctx, viewer, author)
			} else {
				_, err = svc.MarkAuthorRead(ctx, viewer, author)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	want, err := store.UnreadCounts(ctx, viewer)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		got, _, err := a.UnreadCounts(ctx, viewer)
		if err != nil {
			t.Fatal(err)
		}
		if maps.Equal(got, want) {
			return
		}
		select {
		case <-signal:
		case <-deadline:
			t.Fatalf("subscribed viewer's counts = %v, SQL %v", got, want)
		}
	}
}
