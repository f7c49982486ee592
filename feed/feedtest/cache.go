// Package feedtest holds the feed block's conformance suites: RunCacheSuite for every
// feed.Cache (memory, standalone Redis, Cluster) and RunSourceSuite for every feed.Source
// (SQLite, PostgreSQL).
package feedtest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redstate/redstate/feed"
)

// NewCache returns the cache under test; the same instance is fine (tests use fresh ids).
type NewCache func(t *testing.T) feed.Cache

// ID returns a fresh random positive id.
func ID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>12) + 1
}

var base = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func ref(id int64, sec int) feed.PostRef {
	return feed.PostRef{ID: id, CreateTime: base.Add(time.Duration(sec) * time.Second)}
}

func ids(refs []feed.PostRef) []int64 {
	out := make([]int64, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// must returns v or panics with err; the suite's runner turns the panic into a test failure.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// RunCacheSuite runs every Cache conformance test.
func RunCacheSuite(t *testing.T, newCache NewCache) {
	ctx := context.Background()
	tests := map[string]func(t *testing.T, c feed.Cache){
		"PostsRoundTrip": func(t *testing.T, c feed.Cache) {
			p := feed.Post{ID: ID(), AuthorID: ID(), Title: "t", Content: "c", Images: []string{"a.png", "b.png"}, Liked: 3,
				CreateTime: base.Add(1234 * time.Microsecond), UpdateTime: base.Add(time.Hour)}
			mustOK(t, c.PutPosts(ctx, []feed.Post{p}))
			got := must(c.GetPosts(ctx, []int64{p.ID, ID()}))
			if len(got) != 1 || got[p.ID].Title != "t" || !slices.Equal(got[p.ID].Images, p.Images) || !got[p.ID].CreateTime.Equal(p.CreateTime) || got[p.ID].Liked != 3 {
				t.Fatalf("GetPosts = %+v", got)
			}
		},
		"PutPostsNeverOverwritesDeletePostsRemoves": func(t *testing.T, c feed.Cache) {
			p := feed.Post{ID: ID(), AuthorID: ID(), Title: "t", Images: []string{}, Liked: 5, CreateTime: base, UpdateTime: base}
			mustOK(t, c.PutPosts(ctx, []feed.Post{p}))
			older := p
			older.Liked = 4
			mustOK(t, c.PutPosts(ctx, []feed.Post{older})) // an older SQL read: must not overwrite
			if got := must(c.GetPosts(ctx, []int64{p.ID})); got[p.ID].Liked != 5 {
				t.Fatalf("PutPosts overwrote a cached post: liked %d, want 5", got[p.ID].Liked)
			}
			mustOK(t, c.DeletePosts(ctx, []int64{p.ID, ID()}))
			if got := must(c.GetPosts(ctx, []int64{p.ID})); len(got) != 0 {
				t.Fatalf("post still cached after DeletePosts: %+v", got)
			}
			mustOK(t, c.Ping(ctx))
		},
		"PublishPostCachesAndIndexesOnlyAnExistingIndex": func(t *testing.T, c feed.Cache) {
			author := ID()
			p := feed.Post{ID: ID(), AuthorID: author, Title: "t", Images: []string{"a.png"}, CreateTime: base.Add(time.Second), UpdateTime: base}
			if must(c.PublishPost(ctx, p)) {
				t.Fatal("PublishPost reported an index that does not exist")
			}
			if must(c.HasAuthorIndex(ctx, author)) {
				t.Fatal("PublishPost created a partial author index")
			}
			if got := must(c.GetPosts(ctx, []int64{p.ID})); got[p.ID].Title != "t" || !slices.Equal(got[p.ID].Images, p.Images) {
				t.Fatalf("PublishPost did not cache the post: %+v", got)
			}
			mustOK(t, c.SetAuthorIndex(ctx, author, []feed.PostRef{{ID: p.ID, CreateTime: p.CreateTime}}))
			q := feed.Post{ID: ID(), AuthorID: author, Title: "u", Images: []string{}, CreateTime: base.Add(2 * time.Second), UpdateTime: base}
			if !must(c.PublishPost(ctx, q)) {
				t.Fatal("PublishPost did not report the existing index")
			}
			if got := ids(must(c.AuthorPage(ctx, author, feed.Cursor{}, 10))); !slices.Equal(got, []int64{q.ID, p.ID}) {
				t.Fatalf("author index after PublishPost = %v, want [%d %d]", got, q.ID, p.ID)
			}
			older := p
			older.Title = "older"
			must(c.PublishPost(ctx, older)) // a cached post is never overwritten
			if got := must(c.GetPosts(ctx, []int64{p.ID})); got[p.ID].Title != "t" {
				t.Fatalf("PublishPost overwrote a cached post: %+v", got[p.ID])
			}
		},
		"RebuildPrunesEntriesOlderThanTheFollow": func(t *testing.T, c feed.Cache) {
			a, u := ID(), ID()
			for i := int64(1); i <= 3; i++ { // unread from an earlier follow
				must(c.FanOut(ctx, a, ref(i, int(i)), []int64{u}))
			}
			must(c.FanOut(ctx, a, ref(9, 9), []int64{u})) // a fan-out after the new follow, racing the rebuild
			st := feed.UserState{Unread: map[int64][]feed.PostRef{a: {ref(8, 8)}}, Since: map[int64]time.Time{a: base.Add(5 * time.Second)}}
			mustOK(t, c.Rebuild(ctx, u, st))
			if p := must(c.UnreadPage(ctx, u, a, feed.Cursor{}, 10)); !slices.Equal(ids(p), []int64{9, 8}) {
				t.Fatalf("unread after rebuild = %v, want [9 8]", ids(p))
			}
			if got := must(c.UnreadCounts(ctx, u, []int64{a})); got[a] != 2 {
				t.Fatalf("counts after rebuild = %v, want 2", got)
			}
		},
		"FanOutIdempotent": func(t *testing.T, c feed.Cache) {
			author, u1, u2 := ID(), ID(), ID()
			if n := must(c.FanOut(ctx, author, ref(1, 1), []int64{u1, u2})); n != 2 {
				t.Fatalf("first fan-out added %d", n)
			}
			if n := must(c.FanOut(ctx, author, ref(1, 1), []int64{u1, u2})); n != 0 {
				t.Fatalf("repeated fan-out added %d", n)
			}
			must(c.FanOut(ctx, author, ref(2, 2), []int64{u1}))
			if got := must(c.UnreadCounts(ctx, u1, []int64{author})); got[author] != 2 {
				t.Fatalf("counts = %v", got)
			}
		},
		"FanOutSkipsWhatWasRead": func(t *testing.T, c feed.Cache) {
			author, u := ID(), ID()
			must(c.MarkRead(ctx, u, author, 7)) // the read overtook the fan-out
			if n := must(c.FanOut(ctx, author, ref(7, 1), []int64{u})); n != 0 {
				t.Fatalf("fan-out of a read post added %d", n)
			}
			if got := must(c.UnreadCounts(ctx, u, []int64{author})); got[author] != 0 {
				t.Fatalf("counts = %v", got)
			}
		},
		"MarkReadNeverNegative": func(t *testing.T, c feed.Cache) {
			author, u := ID(), ID()
			must(c.FanOut(ctx, author, ref(1, 1), []int64{u}))
			if !must(c.MarkRead(ctx, u, author, 1)) || must(c.MarkRead(ctx, u, author, 1)) || must(c.MarkRead(ctx, u, author, 99)) {
				t.Fatal("MarkRead reported a removal it did not make")
			}
			if got := must(c.UnreadCounts(ctx, u, []int64{author})); got[author] != 0 {
				t.Fatalf("count = %d", got[author])
			}
			if r := must(c.ReadOf(ctx, u, author, []int64{1, 2, 99})); !r[1] || r[2] || !r[99] {
				t.Fatalf("ReadOf = %v", r)
			}
		},
		"MarkAuthorReadAndUnfollow": func(t *testing.T, c feed.Cache) {
			a, b, u := ID(), ID(), ID()
			for i := int64(1); i <= 3; i++ {
				must(c.FanOut(ctx, a, ref(i, int(i)), []int64{u}))
				must(c.FanOut(ctx, b, ref(10+i, int(i)), []int64{u}))
			}
			if n := must(c.MarkAuthorRead(ctx, u, a, []int64{1, 2, 3, 4})); n != 3 {
				t.Fatalf("MarkAuthorRead = %d", n)
			}
			if n := must(c.FanOut(ctx, a, ref(4, 4), []int64{u})); n != 0 { // read before its fan-out
				t.Fatalf("fan-out of a post marked read added %d", n)
			}
			mustOK(t, c.Unfollow(ctx, u, b))
			if got := must(c.UnreadCounts(ctx, u, []int64{a, b})); len(got) != 0 {
				t.Fatalf("counts = %v", got)
			}
			if r := must(c.ReadOf(ctx, u, a, []int64{1, 2, 3, 11})); len(r) != 3 || r[11] {
				t.Fatalf("ReadOf = %v", r)
			}
		},
		"PagesTiesByIDAndCursor": func(t *testing.T, c feed.Cache) {
			a, u := ID(), ID()
			for _, r := range []feed.PostRef{ref(9, 5), ref(10, 5), ref(11, 5), ref(3, 7), ref(100, 1)} {
				must(c.FanOut(ctx, a, r, []int64{u}))
				mustOK(t, c.AddAuthorPost(ctx, a, r))
			}
			want := []int64{3, 11, 10, 9, 100}
			var got []int64
			var cur feed.Cursor
			for range 10 {
				p := must(c.UnreadPage(ctx, u, a, cur, 2))
				if len(p) == 0 {
					break
				}
				got = append(got, ids(p)...)
				cur = feed.Cursor{Time: p[len(p)-1].CreateTime, ID: p[len(p)-1].ID}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("unread pages = %v, want %v", got, want)
			}
			if p := must(c.AuthorPage(ctx, a, feed.Cursor{Time: base.Add(5 * time.Second), ID: 10}, 10)); !slices.Equal(ids(p), []int64{9, 100}) {
				t.Fatalf("author page after (5s, 10) = %v", ids(p))
			}
		},
		"PagesOfLargeTieGroups": func(t *testing.T, c feed.Cache) {
			// 25 posts in one millisecond, groups of three, then singletons; ids of one and two
			// digits, so that string order differs from numeric order.
			a, u := ID(), ID()
			var all []feed.PostRef
			for i := int64(5); i < 50; i++ {
				sec := 100
				switch {
				case i >= 30 && i < 42:
					sec = 50 + int(i-30)/3
				case i >= 42:
					sec = int(i)
				}
				r := ref(i, sec)
				all = append(all, r)
				must(c.FanOut(ctx, a, r, []int64{u}))
				mustOK(t, c.AddAuthorPost(ctx, a, r))
			}
			feed.SortNewestFirst(all)
			for _, size := range []int{1, 2, 7, 20, 50} {
				for name, list := range map[string]func(feed.Cursor, int) ([]feed.PostRef, error){
					"unread": func(cur feed.Cursor, n int) ([]feed.PostRef, error) { return c.UnreadPage(ctx, u, a, cur, n) },
					"author": func(cur feed.Cursor, n int) ([]feed.PostRef, error) { return c.AuthorPage(ctx, a, cur, n) },
				} {
					var got []int64
					var cur feed.Cursor
					for range 100 {
						p := must(list(cur, size))
						if len(p) > size {
							t.Fatalf("%s page of %d holds %d", name, size, len(p))
						}
						got = append(got, ids(p)...)
						if len(p) < size {
							break
						}
						cur = feed.Cursor{Time: p[len(p)-1].CreateTime, ID: p[len(p)-1].ID}
					}
					if !slices.Equal(got, ids(all)) {
						t.Fatalf("%s pages of %d = %v, want %v", name, size, got, ids(all))
					}
				}
			}
		},
		"RebuildMerges": func(t *testing.T, c feed.Cache) {
			a, u := ID(), ID()
			must(c.FanOut(ctx, a, ref(1, 1), []int64{u})) // a fan-out that raced the rebuild
			if must(c.Built(ctx, u)) {
				t.Fatal("built before a rebuild")
			}
			st := feed.UserState{Unread: map[int64][]feed.PostRef{a: {ref(2, 2), ref(3, 3)}}, Read: map[int64][]int64{a: {3}}}
			mustOK(t, c.Rebuild(ctx, u, st))
			if !must(c.Built(ctx, u)) {
				t.Fatal("not built after a rebuild")
			}
			if p := must(c.UnreadPage(ctx, u, a, feed.Cursor{}, 10)); !slices.Equal(ids(p), []int64{2, 1}) {
				t.Fatalf("unread after rebuild = %v, want [2 1]", ids(p))
			}
			if got := must(c.UnreadCounts(ctx, u, []int64{a})); len(got) != 1 || got[a] != 2 {
				t.Fatalf("counts after rebuild = %v", got)
			}
			if n := must(c.FanOut(ctx, a, ref(3, 3), []int64{u})); n != 0 { // read per SQL: a late fan-out
				t.Fatalf("fan-out of a post the rebuild marked read added %d", n)
			}
		},
		"HybridSeesReadMarks": func(t *testing.T, c feed.Cache) {
			// Read marks made in fan-out mode (and those of a hybrid author) are held in the
			// unread set only: the hybrid reads count them as read.
			a, u := ID(), ID()
			must(c.FanOut(ctx, a, ref(1, 1), []int64{u}))
			must(c.MarkRead(ctx, u, a, 1)) // fan-out mode
			must(c.MarkRead(ctx, u, a, 3)) // hybrid mode: no fan-out came
			for i := int64(1); i <= 4; i++ {
				mustOK(t, c.AddAuthorPost(ctx, a, ref(i, int(i))))
			}
			n, p, err := c.HybridUnread(ctx, u, a, base, feed.Cursor{}, 10)
			if err != nil || n != 2 || !slices.Equal(ids(p), []int64{4, 2}) {
				t.Fatalf("HybridUnread = %d %v %v, want 2 [4 2]", n, ids(p), err)
			}
			if counts, _, err := c.HybridCounts(ctx, u, map[int64]time.Time{a: base}); err != nil || counts[a] != 2 {
				t.Fatalf("HybridCounts = %v, %v, want 2", counts, err)
			}
			if r := must(c.ReadOf(ctx, u, a, []int64{1, 2, 3})); !r[1] || r[2] || !r[3] {
				t.Fatalf("ReadOf = %v", r)
			}
		},
		"Hybrid": func(t *testing.T, c feed.Cache) {
			a, u := ID(), ID()
			for i := int64(1); i <= 5; i++ {
				mustOK(t, c.AddAuthorPost(ctx, a, ref(i, int(i))))
			}
			mustOK(t, c.AddRead(ctx, u, []int64{4}))
			n, p, err := c.HybridUnread(ctx, u, a, base.Add(2*time.Second), feed.Cursor{}, 2)
			if err != nil || n != 3 || !slices.Equal(ids(p), []int64{5, 3}) {
				t.Fatalf("HybridUnread = %d %v %v", n, ids(p), err)
			}
			// HybridCounts: the same counts for several authors at once; no index: missing.
			allRead, noIndex := ID(), ID()
			mustOK(t, c.AddAuthorPost(ctx, allRead, ref(6, 6)))
			mustOK(t, c.AddRead(ctx, u, []int64{6}))
			since := map[int64]time.Time{a: base.Add(2 * time.Second), allRead: base, noIndex: base}
			counts, missing, err := c.HybridCounts(ctx, u, since)
			if err != nil || len(counts) != 1 || counts[a] != 3 || !slices.Equal(missing, []int64{noIndex}) {
				t.Fatalf("HybridCounts = %v, missing %v, %v; want {%d: 3}, missing [%d]", counts, missing, err, a, noIndex)
			}
			if counts, missing, err := c.HybridCounts(ctx, u, map[int64]time.Time{a: base.Add(time.Hour)}); err != nil || len(counts) != 0 || len(missing) != 0 {
				t.Fatalf("HybridCounts after the last post = %v, missing %v, %v", counts, missing, err)
			}
		},
	}
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%v", r)
				}
			}()
			test(t, newCache(t))
		})
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// UniquePrefix returns a fresh key prefix, so caches sharing a server never see each other.
func UniquePrefix() string { return fmt.Sprintf("t%x:", ID()) }
