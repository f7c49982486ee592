// Package feed is the feed read/unread state block ("大V博客阅读状态", docs/feed.md): posts of
// authors live in SQL (the source of truth, Source); Redis keeps post caches, author indexes,
// per-user per-author unread sets, unread counts and read sets (Cache), so that "the unread posts
// of author A for user U" and "U's unread count per author" take one or two round trips.
//
// Service is the block (NewService with Options): Publish and the fan-out to followers
// (synchronous, or durable through the queue block with FanOutEnqueuer and FanOutHandler; a
// hybrid mode reads big authors' posts at query time instead), Follow, MarkRead, Like,
// UnreadCounts, ALL/UNREAD pages by page number or cursor, rebuild and verify. Reads are
// answered from SQL while Redis is down, and missed writes repaired when it returns.
// Backends: feed/sqlfeed (the Source: SQLite, PostgreSQL, MySQL/MariaDB), feed/redisfeed (the
// Redis Cache, one Lua script per change) and feed/memfeed (the in-memory Cache);
// feed/feedtest holds the conformance suites. The Example runs the feed on SQLite and Redis
// through a go-redis client; docs/feed.md states the keys, flows and guarantees.
package feed

import (
	"cmp"
	"slices"
	"time"
)

// Block is the name the feed reports metrics (its breaker's state) under.
const Block = "feed"

// Post is the seed's Blog (blog table).
type Post struct {
	// ID is the post id (the seed's blog id), assigned by the Source on create.
	ID int64 `json:"id"`
	// AuthorID is the seed's user_id: the author.
	AuthorID int64 `json:"userId"`
	// Title, Content and Images are the post's content (Images: URLs, the seed's images
	// column, stored as a JSON array).
	Title   string   `json:"title"`
	Content string   `json:"content"`
	Images  []string `json:"images"`
	// Liked is the number of likes.
	Liked int64 `json:"liked"`
	// CreateTime and UpdateTime are the seed's create_time and update_time (UTC, microsecond
	// precision).
	CreateTime time.Time `json:"createTime"`
	UpdateTime time.Time `json:"updateTime"`
}

// Follow is one follow relation: Follower follows Author since Since. A follower's unread
// state of an author covers the author's posts created at or after Since.
type Follow struct {
	Follower int64     `json:"follower"`
	Author   int64     `json:"author"`
	Since    time.Time `json:"since"`
}

// Cursor is a position in a list ordered by (create time, id), newest first; a page starts
// strictly after it. The zero Cursor is the start.
type Cursor struct {
	// Time is the create time of the last post of the previous page.
	Time time.Time
	// ID is that post's id.
	ID int64
}

// IsZero reports whether c is the start.
func (c Cursor) IsZero() bool { return c.Time.IsZero() && c.ID == 0 }

// Before reports whether a post (t, id) comes after the cursor in newest-first order, i.e. it
// belongs to the page starting at c.
func (c Cursor) Before(t time.Time, id int64) bool {
	if c.IsZero() {
		return true
	}
	return t.Before(c.Time) || (t.Equal(c.Time) && id < c.ID)
}

// PostRef is a post's position: its id and create time.
type PostRef struct {
	ID         int64     `json:"id"`
	CreateTime time.Time `json:"createTime"`
}

// HybridPage computes a hybrid author's unread count and page from the author's posts since
// the follow (refs, any order) and the read marks among them: count is exact; page holds up to
// limit unread posts strictly after cursor, newest first (ties by id descending).
func HybridPage(refs []PostRef, read map[int64]bool, after Cursor, limit int) (int64, []PostRef, error) {
	unread := make([]PostRef, 0, len(refs))
	for _, r := range refs {
		if !read[r.ID] {
			unread = append(unread, r)
		}
	}
	SortNewestFirst(unread)
	var page []PostRef
	for _, r := range unread {
		if len(page) >= limit {
			break
		}
		if after.Before(r.CreateTime, r.ID) {
			page = append(page, r)
		}
	}
	return int64(len(unread)), page, nil
}

// SortNewestFirst sorts refs by create time, then id, descending.
func SortNewestFirst(refs []PostRef) {
	slices.SortFunc(refs, func(a, b PostRef) int {
		if c := b.CreateTime.Compare(a.CreateTime); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}
