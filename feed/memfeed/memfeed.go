// Package memfeed is the in-memory feed.Cache, with the Redis cache's semantics (checked by
// feedtest.RunCacheSuite): the embedded default and the tests' reference.
package memfeed

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redstate/redstate/feed"
)

// Cache is the in-memory feed.Cache. It is safe for concurrent use; TTLs are not modelled
// (entries live as long as the process).
type Cache struct {
	mu      sync.Mutex
	posts   map[int64]feed.Post
	authors map[int64]map[int64]time.Time           // author → post → create time
	unread  map[int64]map[int64]map[int64]time.Time // user → author → post → time
	// held are the read posts an unread set holds (Redis: at -inf), user → author → post.
	held  map[int64]map[int64]map[int64]bool
	read  map[int64]map[int64]bool
	built map[int64]bool
}

var _ feed.Cache = (*Cache)(nil)

// New returns an empty Cache.
func New() *Cache {
	return &Cache{posts: map[int64]feed.Post{}, authors: map[int64]map[int64]time.Time{},
		unread: map[int64]map[int64]map[int64]time.Time{}, held: map[int64]map[int64]map[int64]bool{},
		read: map[int64]map[int64]bool{}, built: map[int64]bool{}}
}

func ms(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// PutPosts implements feed.Cache.
func (c *Cache) PutPosts(_ context.Context, posts []feed.Post) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range posts {
		if _, ok := c.posts[p.ID]; ok {
			continue
		}
		p.Images = slices.Clone(p.Images)
		c.posts[p.ID] = p
	}
	return nil
}

// DeletePosts implements feed.Cache.
func (c *Cache) DeletePosts(_ context.Context, ids []int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.posts, id)
	}
	return nil
}

// Ping implements feed.Cache.
func (c *Cache) Ping(context.Context) error { return nil }

// GetPosts implements feed.Cache.
func (c *Cache) GetPosts(_ context.Context, ids []int64) (map[int64]feed.Post, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]feed.Post{}
	for _, id := range ids {
		if p, ok := c.posts[id]; ok {
			p.Images = slices.Clone(p.Images)
			out[id] = p
		}
	}
	return out, nil
}

// PublishPost implements feed.Cache.
func (c *Cache) PublishPost(_ context.Context, post feed.Post) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.posts[post.ID]; !ok {
		post.Images = slices.Clone(post.Images)
		c.posts[post.ID] = post
	}
	idx := c.authors[post.AuthorID]
	if len(idx) == 0 {
		return false, nil
	}
	idx[post.ID] = ms(post.CreateTime)
	return true, nil
}

// AddAuthorPost implements feed.Cache.
func (c *Cache) AddAuthorPost(ctx context.Context, author int64, ref feed.PostRef) error {
	return c.SetAuthorIndex(ctx, author, []feed.PostRef{ref})
}

// HasAuthorIndex implements feed.Cache.
func (c *Cache) HasAuthorIndex(_ context.Context, author int64) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.authors[author]) > 0, nil
}

// SetAuthorIndex implements feed.Cache.
func (c *Cache) SetAuthorIndex(_ context.Context, author int64, refs []feed.PostRef) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := c.authors[author]
	if idx == nil {
		idx = map[int64]time.Time{}
		c.authors[author] = idx
	}
	for _, r := range refs {
		idx[r.ID] = ms(r.CreateTime)
	}
	return nil
}

// page returns up to limit entries of set after cursor, newest first.
func page(set map[int64]time.Time, after feed.Cursor, limit int, min time.Time) []feed.PostRef {
	refs := make([]feed.PostRef, 0, len(set))
	for id, t := range set {
		if !t.Before(min) {
			refs = append(refs, feed.PostRef{ID: id, CreateTime: t})
		}
	}
	feed.SortNewestFirst(refs)
	after.Time = ms(after.Time)
	out := []feed.PostRef{}
	for _, r := range refs {
		if len(out) >= limit {
			break
		}
		if after.Before(r.CreateTime, r.ID) {
			out = append(out, r)
		}
	}
	return out
}

// AuthorPage implements feed.Cache.
func (c *Cache) AuthorPage(_ context.Context, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return page(c.authors[author], after, limit, time.Time{}), nil
}

func (c *Cache) unreadOf(user, author int64) map[int64]time.Time {
	byAuthor := c.unread[user]
	if byAuthor == nil {
		byAuthor = map[int64]map[int64]time.Time{}
		c.unread[user] = byAuthor
	}
	set := byAuthor[author]
	if set == nil {
		set = map[int64]time.Time{}
		byAuthor[author] = set
	}
	return set
}

// heldOf returns user's read posts held in the unread set of author, creating it.
func (c *Cache) heldOf(user, author int64) map[int64]bool {
	byAuthor := c.held[user]
	if byAuthor == nil {
		byAuthor = map[int64]map[int64]bool{}
		c.held[user] = byAuthor
	}
	set := byAuthor[author]
	if set == nil {
		set = map[int64]bool{}
		byAuthor[author] = set
	}
	return set
}

// FanOut implements feed.Cache.
func (c *Cache) FanOut(_ context.Context, author int64, ref feed.PostRef, followers []int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	added := 0
	for _, u := range followers {
		if c.held[u][author][ref.ID] {
			continue
		}
		set := c.unreadOf(u, author)
		if _, ok := set[ref.ID]; !ok {
			set[ref.ID] = ms(ref.CreateTime)
			added++
		}
	}
	return added, nil
}

func (c *Cache) addRead(user int64, posts ...int64) {
	r := c.read[user]
	if r == nil {
		r = map[int64]bool{}
		c.read[user] = r
	}
	for _, p := range posts {
		r[p] = true
	}
}

// hold marks posts read in user's unread set of author and returns how many were unread.
func (c *Cache) hold(user, author int64, posts ...int64) int {
	set, held := c.unreadOf(user, author), c.heldOf(user, author)
	n := 0
	for _, p := range posts {
		if _, ok := set[p]; ok {
			delete(set, p)
			n++
		}
		held[p] = true
	}
	return n
}

// MarkRead implements feed.Cache.
func (c *Cache) MarkRead(_ context.Context, user, author, post int64) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hold(user, author, post) == 1, nil
}

// MarkAuthorRead implements feed.Cache.
func (c *Cache) MarkAuthorRead(_ context.Context, user, author int64, posts []int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hold(user, author, posts...), nil
}

// Unfollow implements feed.Cache.
func (c *Cache) Unfollow(_ context.Context, user, author int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unread[user], author)
	delete(c.held[user], author)
	return nil
}

// Built implements feed.Cache.
func (c *Cache) Built(_ context.Context, user int64) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.built[user], nil
}

// Rebuild implements feed.Cache.
func (c *Cache) Rebuild(_ context.Context, user int64, st feed.UserState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.Replace {
		delete(c.read, user)
		for author := range st.Unread {
			delete(c.unread[user], author)
			delete(c.held[user], author)
		}
	}
	for _, read := range st.Read {
		c.addRead(user, read...)
	}
	for author, refs := range st.Unread {
		set := c.unreadOf(user, author)
		if since, ok := st.Since[author]; ok {
			for p, t := range set {
				if t.UnixMilli() < since.UnixMilli() {
					delete(set, p)
				}
			}
		}
		c.hold(user, author, st.Read[author]...)
		for _, r := range refs {
			if _, ok := set[r.ID]; !ok && !c.held[user][author][r.ID] {
				set[r.ID] = ms(r.CreateTime)
			}
		}
	}
	c.built[user] = true
	return nil
}

// UnreadPage implements feed.Cache.
func (c *Cache) UnreadPage(_ context.Context, user, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return page(c.unread[user][author], after, limit, time.Time{}), nil
}

// UnreadCounts implements feed.Cache.
func (c *Cache) UnreadCounts(_ context.Context, user int64, authors []int64) (map[int64]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]int64{}
	for _, a := range authors {
		if n := len(c.unread[user][a]); n > 0 {
			out[a] = int64(n)
		}
	}
	return out, nil
}

// ReadOf implements feed.Cache.
func (c *Cache) ReadOf(_ context.Context, user, author int64, posts []int64) (map[int64]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]bool{}
	for _, p := range posts {
		if c.isRead(user, author, p) {
			out[p] = true
		}
	}
	return out, nil
}

// isRead reports whether user read post of author: in the read set or held read in the
// unread set of author.
func (c *Cache) isRead(user, author, post int64) bool {
	return c.read[user][post] || c.held[user][author][post]
}

// AddRead implements feed.Cache.
func (c *Cache) AddRead(_ context.Context, user int64, posts []int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addRead(user, posts...)
	return nil
}

// HybridCounts implements feed.Cache.
func (c *Cache) HybridCounts(_ context.Context, user int64, since map[int64]time.Time) (map[int64]int64, []int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := map[int64]int64{}
	var missing []int64
	for author, from := range since {
		idx := c.authors[author]
		if len(idx) == 0 {
			missing = append(missing, author)
			continue
		}
		for id, t := range idx {
			if !t.Before(ms(from)) && !c.isRead(user, author, id) {
				counts[author]++
			}
		}
	}
	slices.Sort(missing)
	return counts, missing, nil
}

// HybridUnread implements feed.Cache.
func (c *Cache) HybridUnread(_ context.Context, user, author int64, since time.Time, after feed.Cursor, limit int) (int64, []feed.PostRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var refs []feed.PostRef
	read := map[int64]bool{}
	for id, t := range c.authors[author] {
		if !t.Before(ms(since)) {
			refs = append(refs, feed.PostRef{ID: id, CreateTime: t})
			read[id] = c.isRead(user, author, id)
		}
	}
	after.Time = ms(after.Time)
	return feed.HybridPage(refs, read, after, limit)
}
