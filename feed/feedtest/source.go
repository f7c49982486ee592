package feedtest

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
)

// NewSource returns the source under test; the same instance is fine (tests use fresh ids).
type NewSource func(t *testing.T) feed.Source

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if !redstate.IsCode(err, code) {
		t.Errorf("%s: err = %v, want %s", what, err, code)
	}
}

// post creates a post of author at base+sec seconds.
func post(t *testing.T, s feed.Source, author int64, sec int) feed.Post {
	t.Helper()
	p, err := s.CreatePost(context.Background(), feed.Post{AuthorID: author, Title: "t", CreateTime: base.Add(time.Duration(sec) * time.Second)})
	if err != nil {
		t.Fatalf("CreatePost: %v", err)
	}
	return p
}

// pageAll reads every page of size n through list, checking that pages never repeat a post.
func pageAll(t *testing.T, n int, list func(after feed.Cursor, limit int) ([]feed.PostRef, error)) []int64 {
	t.Helper()
	var out []int64
	var after feed.Cursor
	for range 1000 {
		page, err := list(after, n)
		if err != nil {
			t.Fatalf("page after %+v: %v", after, err)
		}
		if len(page) > n {
			t.Fatalf("page of %d holds %d", n, len(page))
		}
		out = append(out, ids(page)...)
		if len(page) < n {
			return out
		}
		last := page[len(page)-1]
		after = feed.Cursor{Time: last.CreateTime, ID: last.ID}
	}
	t.Fatal("paging did not end")
	return nil
}

// RunSourceSuite runs every Source conformance test.
func RunSourceSuite(t *testing.T, newSource NewSource) {
	ctx := context.Background()
	tests := map[string]func(t *testing.T, s feed.Source){
		"RepairMarksRenewAndClearByGeneration": func(t *testing.T, s feed.Source) {
			user, post := ID(), ID()
			mine := func() map[string]feed.Repair {
				out := map[string]feed.Repair{}
				for _, r := range must(s.Repairs(ctx, 1000)) {
					if (r.Kind == feed.RepairUser && r.ID == user) || (r.Kind == feed.RepairPost && r.ID == post) {
						out[r.Kind] = r
					}
				}
				return out
			}
			wantCode(t, "MarkRepair of an unknown kind", s.MarkRepair(ctx, "nope", user), redstate.EINVALID)
			wantCode(t, "MarkRepair of id 0", s.MarkRepair(ctx, feed.RepairUser, 0), redstate.EINVALID)
			mustOK(t, s.MarkRepair(ctx, feed.RepairUser, user))
			mustOK(t, s.MarkRepair(ctx, feed.RepairPost, post))
			first := mine()
			if len(first) != 2 {
				t.Fatalf("Repairs = %+v, want the user and the post mark", first)
			}
			mustOK(t, s.MarkRepair(ctx, feed.RepairUser, user)) // renewed
			renewed := mine()[feed.RepairUser]
			if renewed.Gen <= first[feed.RepairUser].Gen {
				t.Fatalf("renewed generation %d, first %d", renewed.Gen, first[feed.RepairUser].Gen)
			}
			mustOK(t, s.RepairDone(ctx, first[feed.RepairUser])) // the old generation: the mark stays
			mustOK(t, s.RepairDone(ctx, first[feed.RepairPost]))
			if left := mine(); len(left) != 1 || left[feed.RepairUser].Gen != renewed.Gen {
				t.Fatalf("after RepairDone of the old generation: %+v, want only the renewed user mark", left)
			}
			mustOK(t, s.RepairDone(ctx, renewed))
			if left := mine(); len(left) != 0 {
				t.Fatalf("after RepairDone: %+v", left)
			}
		},
		"AuthorsPagesAuthorsWithPosts": func(t *testing.T, s feed.Source) {
			a := ID()
			post(t, s, a, 1)
			post(t, s, a, 2)
			got := must(s.Authors(ctx, a-1, 1))
			if len(got) != 1 || got[0] != a {
				t.Fatalf("Authors(after %d) = %v, want [%d]", a-1, got, a)
			}
			if len(must(s.Authors(ctx, a, 1))) > 0 && must(s.Authors(ctx, a, 1))[0] <= a {
				t.Fatal("Authors repeats or goes back")
			}
		},
		"CreatePostRoundTrip": func(t *testing.T, s feed.Source) {
			author := ID()
			at := base.Add(1234567 * time.Nanosecond).In(time.FixedZone("x", 3600))
			// A 4-byte character (emoji) too: MySQL's utf8 (utf8mb3) would refuse or mangle it.
			p := must(s.CreatePost(ctx, feed.Post{AuthorID: author, Title: "标题 🚀", Content: "c 🎉", Images: []string{"a.png", "b.png"}, CreateTime: at}))
			if p.ID <= 0 || p.CreateTime.Location() != time.UTC || !p.CreateTime.Equal(base.Add(1234*time.Microsecond)) || !p.UpdateTime.Equal(p.CreateTime) {
				t.Fatalf("CreatePost = %+v (want an id, µs precision in UTC, update = create)", p)
			}
			q := must(s.CreatePost(ctx, feed.Post{AuthorID: author, Title: "now"}))
			if q.ID == p.ID || q.CreateTime.IsZero() || time.Since(q.CreateTime) > time.Minute || q.Images == nil {
				t.Fatalf("second CreatePost = %+v", q)
			}
			missing := q.ID + 1000000
			got := must(s.Posts(ctx, []int64{p.ID, q.ID, missing}))
			if len(got) != 2 || got[p.ID].Title != "标题 🚀" || got[p.ID].Content != "c 🎉" || !slices.Equal(got[p.ID].Images, p.Images) || got[p.ID].AuthorID != author ||
				!got[p.ID].CreateTime.Equal(p.CreateTime) || got[p.ID].CreateTime.Location() != time.UTC {
				t.Fatalf("Posts = %+v", got)
			}
			if len(must(s.Posts(ctx, nil))) != 0 {
				t.Error("Posts(nil) not empty")
			}
			explicit := must(s.CreatePost(ctx, feed.Post{ID: missing, AuthorID: author, Title: "given id"}))
			if explicit.ID != missing {
				t.Errorf("CreatePost with id %d stored %d", missing, explicit.ID)
			}
			_, err := s.CreatePost(ctx, feed.Post{ID: missing, AuthorID: author, Title: "again"})
			if err == nil {
				t.Error("CreatePost of an existing id succeeded")
			}
		},
		"InvalidArguments": func(t *testing.T, s feed.Source) {
			_, err := s.CreatePost(ctx, feed.Post{AuthorID: 0, Title: "t"})
			wantCode(t, "CreatePost without author", err, redstate.EINVALID)
			_, err = s.CreatePost(ctx, feed.Post{AuthorID: 1, Title: ""})
			wantCode(t, "CreatePost without title", err, redstate.EINVALID)
			_, err = s.Posts(ctx, make([]int64, 1001))
			wantCode(t, "Posts of 1001 ids", err, redstate.EINVALID)
			_, err = s.ReadOf(ctx, 1, make([]int64, 1001))
			wantCode(t, "ReadOf of 1001 ids", err, redstate.EINVALID)
			_, err = s.LikedOf(ctx, 1, make([]int64, 1001))
			wantCode(t, "LikedOf of 1001 ids", err, redstate.EINVALID)
			for _, limit := range []int{0, -1, 1001} {
				_, err = s.AuthorPosts(ctx, 1, feed.Cursor{}, limit)
				wantCode(t, "AuthorPosts limit", err, redstate.EINVALID)
				_, err = s.UnreadPosts(ctx, 1, 2, feed.Cursor{}, limit)
				wantCode(t, "UnreadPosts limit", err, redstate.EINVALID)
				_, err = s.Followers(ctx, 1, 0, limit)
				wantCode(t, "Followers limit", err, redstate.EINVALID)
				_, err = s.Users(ctx, 0, limit)
				wantCode(t, "Users limit", err, redstate.EINVALID)
			}
			_, err = s.Follow(ctx, 5, 5, base)
			wantCode(t, "Follow self", err, redstate.EINVALID)
			_, err = s.Follow(ctx, -1, 5, base)
			wantCode(t, "Follow by -1", err, redstate.EINVALID)
			_, err = s.MarkRead(ctx, 0, 1, base)
			wantCode(t, "MarkRead by 0", err, redstate.EINVALID)
			_, err = s.Like(ctx, 1, 0)
			wantCode(t, "Like of 0", err, redstate.EINVALID)
			_, err = s.UnreadCount(ctx, 0, 1)
			wantCode(t, "UnreadCount of 0", err, redstate.EINVALID)
		},
		"AuthorPostsNewestFirstWithTiesByID": func(t *testing.T, s feed.Source) {
			author := ID()
			for i := range 7 {
				post(t, s, author, i/3) // groups of three share a second
			}
			post(t, s, ID(), 1) // another author's post is never listed
			refs := must(s.AuthorPosts(ctx, author, feed.Cursor{}, 100))
			got := slices.Clone(refs)
			feed.SortNewestFirst(got)
			if len(refs) != 7 || !slices.Equal(ids(refs), ids(got)) {
				t.Fatalf("AuthorPosts = %v, not newest first with ties by id descending (%v)", ids(refs), ids(got))
			}
			for _, n := range []int{1, 2, 3, 4} {
				if paged := pageAll(t, n, func(after feed.Cursor, limit int) ([]feed.PostRef, error) {
					return s.AuthorPosts(ctx, author, after, limit)
				}); !slices.Equal(paged, ids(refs)) {
					t.Errorf("pages of %d = %v, want %v", n, paged, ids(refs))
				}
			}
		},
		"FollowKeepsFirstSince": func(t *testing.T, s feed.Source) {
			u, a := ID(), ID()
			since := base.Add(10 * time.Second)
			if !must(s.Follow(ctx, u, a, since)) {
				t.Fatal("first Follow not created")
			}
			if must(s.Follow(ctx, u, a, since.Add(time.Hour))) {
				t.Error("second Follow reported created")
			}
			f := must(s.FollowOf(ctx, u, a))
			if f.Follower != u || f.Author != a || !f.Since.Equal(since) {
				t.Errorf("FollowOf = %+v, want since %v", f, since)
			}
			if !must(s.Unfollow(ctx, u, a)) || must(s.Unfollow(ctx, u, a)) {
				t.Error("Unfollow did not report removed once")
			}
			_, err := s.FollowOf(ctx, u, a)
			wantCode(t, "FollowOf after unfollow", err, redstate.ENOTFOUND)
		},
		"FollowersUsersAndFollowing": func(t *testing.T, s feed.Source) {
			a, b := ID(), ID()
			var followers []int64
			for range 7 {
				u := ID()
				followers = append(followers, u)
				must(s.Follow(ctx, u, a, base))
				must(s.Follow(ctx, u, b, base))
			}
			slices.Sort(followers)
			if n := must(s.FollowerCount(ctx, a)); n != 7 {
				t.Errorf("FollowerCount = %d", n)
			}
			var got []int64
			after := int64(0)
			for {
				page := must(s.Followers(ctx, a, after, 3))
				for _, f := range page {
					if f.Author != a || !f.Since.Equal(base) {
						t.Errorf("Followers row %+v", f)
					}
					got = append(got, f.Follower)
				}
				if len(page) < 3 {
					break
				}
				after = page[len(page)-1].Follower
			}
			if !slices.Equal(got, followers) {
				t.Errorf("Followers pages = %v, want %v", got, followers)
			}
			// Users: distinct and ascending; our followers appear once each.
			var users []int64
			after = followers[0] - 1
			for after < followers[len(followers)-1] {
				page := must(s.Users(ctx, after, 2))
				if len(page) == 0 {
					break
				}
				users = append(users, page...)
				after = page[len(page)-1]
			}
			if !slices.IsSorted(users) || len(slices.Compact(slices.Clone(users))) != len(users) {
				t.Errorf("Users pages not distinct ascending: %v", users)
			}
			for _, u := range followers {
				if !slices.Contains(users, u) {
					t.Errorf("Users misses %d", u)
				}
			}
			fs := must(s.Following(ctx, followers[0]))
			authors := []int64{fs[0].Author, fs[len(fs)-1].Author}
			want := []int64{min(a, b), max(a, b)}
			if len(fs) != 2 || !slices.Equal(authors, want) {
				t.Errorf("Following = %+v, want authors %v", fs, want)
			}
		},
		"UnreadIsSinceFollowMinusRead": func(t *testing.T, s feed.Source) {
			u, a := ID(), ID()
			old := post(t, s, a, 1) // before the follow
			must(s.Follow(ctx, u, a, base.Add(5*time.Second)))
			var unread []int64
			for i := range 6 {
				unread = append(unread, post(t, s, a, 5+i).ID) // the follow's own second counts
			}
			if len(must(s.UnreadPosts(ctx, ID(), a, feed.Cursor{}, 100))) != 0 {
				t.Error("a non-follower has unread posts")
			}
			if !must(s.MarkRead(ctx, u, unread[2], base)) || must(s.MarkRead(ctx, u, unread[2], base)) {
				t.Error("MarkRead did not report created exactly once")
			}
			if must(s.MarkRead(ctx, u, old.ID, base)) != true {
				t.Error("MarkRead of a post before the follow not created")
			}
			want := []int64{unread[5], unread[4], unread[3], unread[1], unread[0]}
			if got := ids(must(s.UnreadPosts(ctx, u, a, feed.Cursor{}, 100))); !slices.Equal(got, want) {
				t.Errorf("UnreadPosts = %v, want %v", got, want)
			}
			if got := pageAll(t, 2, func(after feed.Cursor, limit int) ([]feed.PostRef, error) {
				return s.UnreadPosts(ctx, u, a, after, limit)
			}); !slices.Equal(got, want) {
				t.Errorf("UnreadPosts pages = %v, want %v", got, want)
			}
			if n := must(s.UnreadCount(ctx, u, a)); n != 5 {
				t.Errorf("UnreadCount = %d, want 5", n)
			}
			read := must(s.ReadOf(ctx, u, []int64{old.ID, unread[2], unread[3]}))
			if !maps.Equal(read, map[int64]bool{old.ID: true, unread[2]: true}) {
				t.Errorf("ReadOf = %v", read)
			}
			_, err := s.MarkRead(ctx, u, unread[5]+1000000, base)
			wantCode(t, "MarkRead of a missing post", err, redstate.ENOTFOUND)
			must(s.Unfollow(ctx, u, a))
			if n := must(s.UnreadCount(ctx, u, a)); n != 0 {
				t.Errorf("UnreadCount after unfollow = %d", n)
			}
		},
		"UnreadCountsGroupsEveryFollowedAuthor": func(t *testing.T, s feed.Source) {
			u, a, b, c := ID(), ID(), ID(), ID()
			post(t, s, a, 1) // before the follow
			must(s.Follow(ctx, u, a, base.Add(5*time.Second)))
			must(s.Follow(ctx, u, b, base))
			must(s.Follow(ctx, u, c, base))
			read := post(t, s, a, 6)
			post(t, s, a, 7)
			post(t, s, a, 8)
			post(t, s, b, 2)
			readB := post(t, s, b, 3)
			post(t, s, ID(), 4) // an author u does not follow
			must(s.MarkRead(ctx, u, read.ID, base))
			must(s.MarkRead(ctx, u, readB.ID, base))
			want := map[int64]int64{a: 2, b: 1} // c has no post: absent
			got := must(s.UnreadCounts(ctx, u))
			if !maps.Equal(got, want) {
				t.Errorf("UnreadCounts = %v, want %v", got, want)
			}
			for author, n := range want {
				if one := must(s.UnreadCount(ctx, u, author)); one != n {
					t.Errorf("UnreadCount(%d) = %d, UnreadCounts says %d", author, one, n)
				}
			}
			if got := must(s.UnreadCounts(ctx, ID())); len(got) != 0 {
				t.Errorf("UnreadCounts of a user who follows nobody = %v", got)
			}
			_, err := s.UnreadCounts(ctx, 0)
			wantCode(t, "UnreadCounts(0)", err, redstate.EINVALID)
		},
		"FollowingCountsCountsFollowersUpTo": func(t *testing.T, s feed.Source) {
			u, a, b, c := ID(), ID(), ID(), ID()
			must(s.Follow(ctx, u, a, base))
			must(s.Follow(ctx, u, b, base.Add(time.Second)))
			for range 4 {
				must(s.Follow(ctx, ID(), a, base))
			}
			must(s.Follow(ctx, ID(), c, base)) // an author u does not follow
			post(t, s, b, 1)
			check := func(upTo int64, want map[int64]int64) {
				t.Helper()
				fs := must(s.FollowingCounts(ctx, u, upTo))
				got := map[int64]int64{}
				for i, f := range fs {
					got[f.Author] = f.Followers
					if f.HasPosts != (f.Author == b) {
						t.Errorf("FollowingCounts row %+v: HasPosts wrong (only %d has posts)", f, b)
					}
					if f.Follower != u || (f.Author == b) != f.Since.Equal(base.Add(time.Second)) {
						t.Errorf("FollowingCounts row %+v", f)
					}
					if i > 0 && fs[i-1].Author >= f.Author {
						t.Errorf("FollowingCounts not ascending by author: %+v", fs)
					}
				}
				if !maps.Equal(got, want) {
					t.Errorf("FollowingCounts(upTo %d) = %v, want %v", upTo, got, want)
				}
			}
			check(0, map[int64]int64{a: 5, b: 1})
			check(100, map[int64]int64{a: 5, b: 1})
			check(3, map[int64]int64{a: 3, b: 1})
			if fs := must(s.FollowingCounts(ctx, ID(), 0)); len(fs) != 0 {
				t.Errorf("FollowingCounts of a user who follows nobody = %+v", fs)
			}
			_, err := s.FollowingCounts(ctx, 0, 0)
			wantCode(t, "FollowingCounts(0)", err, redstate.EINVALID)
		},
		"MarkAuthorReadReturnsNewlyMarked": func(t *testing.T, s feed.Source) {
			u, a := ID(), ID()
			must(s.Follow(ctx, u, a, base))
			var ps []int64
			for i := range 5 {
				ps = append(ps, post(t, s, a, i).ID)
			}
			other := post(t, s, ID(), 1)
			must(s.MarkRead(ctx, u, ps[1], base))
			got := must(s.MarkAuthorRead(ctx, u, a, base.Add(3*time.Second), base))
			slices.Sort(got)
			if want := []int64{ps[0], ps[2], ps[3]}; !slices.Equal(got, want) {
				t.Errorf("MarkAuthorRead = %v, want %v (up to the 4th post, not the one already read)", got, want)
			}
			if got := must(s.MarkAuthorRead(ctx, u, a, base.Add(3*time.Second), base)); len(got) != 0 {
				t.Errorf("MarkAuthorRead again = %v", got)
			}
			if got := ids(must(s.UnreadPosts(ctx, u, a, feed.Cursor{}, 10))); !slices.Equal(got, []int64{ps[4]}) {
				t.Errorf("unread after = %v", got)
			}
			if must(s.ReadOf(ctx, u, []int64{other.ID}))[other.ID] {
				t.Error("another author's post marked read")
			}
		},
		"LikeCountsOnce": func(t *testing.T, s feed.Source) {
			a := ID()
			p := post(t, s, a, 0)
			u, v := ID(), ID()
			if !must(s.Like(ctx, u, p.ID)) || must(s.Like(ctx, u, p.ID)) || !must(s.Like(ctx, v, p.ID)) {
				t.Error("Like did not report changed once per user")
			}
			if got := must(s.Posts(ctx, []int64{p.ID}))[p.ID].Liked; got != 2 {
				t.Errorf("liked = %d, want 2", got)
			}
			if !maps.Equal(must(s.LikedOf(ctx, u, []int64{p.ID, p.ID + 1})), map[int64]bool{p.ID: true}) {
				t.Error("LikedOf wrong")
			}
			if !must(s.Unlike(ctx, u, p.ID)) || must(s.Unlike(ctx, u, p.ID)) {
				t.Error("Unlike did not report changed once")
			}
			if got := must(s.Posts(ctx, []int64{p.ID}))[p.ID].Liked; got != 1 {
				t.Errorf("liked after unlike = %d, want 1", got)
			}
			_, err := s.Like(ctx, u, p.ID+1000000)
			wantCode(t, "Like of a missing post", err, redstate.ENOTFOUND)
		},
		"ConcurrentWritesChangeOnce": func(t *testing.T, s feed.Source) {
			a, u := ID(), ID()
			p := post(t, s, a, 0)
			var likes, reads, follows atomic.Int64
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					if ok, err := s.Like(ctx, u, p.ID); err != nil {
						t.Errorf("Like: %v", err)
					} else if ok {
						likes.Add(1)
					}
					if ok, err := s.MarkRead(ctx, u, p.ID, base); err != nil {
						t.Errorf("MarkRead: %v", err)
					} else if ok {
						reads.Add(1)
					}
					if ok, err := s.Follow(ctx, u, a, base); err != nil {
						t.Errorf("Follow: %v", err)
					} else if ok {
						follows.Add(1)
					}
				})
			}
			wg.Wait()
			if likes.Load() != 1 || reads.Load() != 1 || follows.Load() != 1 {
				t.Errorf("changed: likes %d reads %d follows %d, want 1 each", likes.Load(), reads.Load(), follows.Load())
			}
			if got := must(s.Posts(ctx, []int64{p.ID}))[p.ID].Liked; got != 1 {
				t.Errorf("liked = %d after 16 concurrent likes, want 1", got)
			}
		},
	}
	for _, name := range slices.Sorted(maps.Keys(tests)) {
		t.Run(name, func(t *testing.T) {
			s := newSource(t)
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%v", r)
				}
			}()
			tests[name](t, s)
		})
	}
}
