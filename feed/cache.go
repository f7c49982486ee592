package feed

import (
	"context"
	"time"
)

// TTLs of the seed (4.2).
const (
	// PostTTL is the post cache's TTL.
	PostTTL = 7 * 24 * time.Hour
	// StateTTL is the lifetime of a user's built marker from the rebuild that built the state:
	// the user's state is rebuilt from SQL at the first access after it expired. Read and unread
	// sets live at least as long (SetTTL from their creation and from every rebuild), so a built
	// state never misses a set that has expired (docs/feed.md, "Expiry").
	StateTTL = 30 * 24 * time.Hour
	// SetTTL is the TTL of read and unread sets, given when a set is created, on every read mark
	// and on every rebuild: StateTTL plus an hour of slack.
	SetTTL = StateTTL + time.Hour
)

// UserState is a user's unread state as rebuilt from SQL: per fan-out author, the unread
// posts; and the read posts.
type UserState struct {
	// Unread maps an author (fanned-out, not hybrid) to the user's unread posts of that author.
	Unread map[int64][]PostRef
	// Since maps an author of Unread to the user's follow time: entries of posts created
	// before it are removed (left from an earlier follow, e.g. an unfollow and a new follow
	// while Redis was unreachable). An author absent from it prunes nothing.
	Since map[int64]time.Time
	// Read maps a followed author to the user's read posts of that author since the follow
	// (all of them go to the read set; those of an author of Unread are also held as read in
	// the author's unread set, so that a fan-out does not add them again).
	Read map[int64][]int64
	// Hybrid lists the followed hybrid authors: Rebuild renews the TTL of the user's unread
	// sets of them (which hold the read marks made since the last rebuild) and adds nothing.
	Hybrid []int64
	// Replace makes Rebuild replace the user's keys instead of merging (an operator's
	// `feed rebuild`: a fan-out racing it may be lost and is then repaired by the next one).
	Replace bool
}

// Cache is the Redis side of the feed (docs/feed.md, Keys). feed/redisfeed and feed/memfeed
// implement it with the same semantics, checked by feedtest.RunCacheSuite. Every method that
// changes a user's unread set and count does it in one atomic step, and moves the count only by
// what the set changed, so retries are harmless and a count never drifts from its set. Errors are
// *redstate.Error: EINVALID, EUNAVAILABLE.
type Cache interface {
	// PutPosts caches those of posts that are not cached (HSET + EXPIRE PostTTL, one script
	// per post, pipelined: one round trip per node); a cached post is left as it is: writers
	// delete a post whose SQL row changed (DeletePosts), so a refill from an older SQL read
	// never overwrites a newer copy.
	PutPosts(ctx context.Context, posts []Post) error
	// DeletePosts removes the cached posts among ids (after their SQL row changed).
	DeletePosts(ctx context.Context, ids []int64) error
	// Ping checks that the cache answers (the breaker's background probe).
	Ping(ctx context.Context) error
	// GetPosts returns the cached posts among ids (misses absent), in one round trip per node.
	GetPosts(ctx context.Context, ids []int64) (map[int64]Post, error)

	// PublishPost does a new post's Redis work in one round trip (one script per key,
	// pipelined; the post and the author index are in different slots on Cluster): it caches
	// the post as PutPosts does and, only if the author's index exists, adds the post to it.
	// It reports whether the index existed (when not, the caller builds it from SQL, which
	// holds the post: a partial index would never be built).
	PublishPost(ctx context.Context, post Post) (indexed bool, err error)
	// AddAuthorPost adds a post to its author's index.
	AddAuthorPost(ctx context.Context, author int64, ref PostRef) error
	// HasAuthorIndex reports whether author's index exists (it is built from SQL otherwise).
	HasAuthorIndex(ctx context.Context, author int64) (bool, error)
	// SetAuthorIndex adds refs to author's index (a rebuild from SQL; merges, never removes).
	SetAuthorIndex(ctx context.Context, author int64, refs []PostRef) error
	// AuthorPage returns up to limit of author's posts strictly after cursor, newest first.
	AuthorPage(ctx context.Context, author int64, after Cursor, limit int) ([]PostRef, error)

	// FanOut adds the post to the unread set of each follower that holds neither the post nor
	// a read mark of it (unread and read posts of an author are one set: a fan-out after a read,
	// or repeated, changes nothing), in one script per group of followers, pipelined (one round
	// trip per node). It returns how many sets changed.
	FanOut(ctx context.Context, author int64, ref PostRef, followers []int64) (int, error)
	// MarkRead marks post read in user's unread set of author (where it leaves the count; a
	// later fan-out does not add it again; the read set is not written: ReadOf and the hybrid
	// reads look in both); idempotent, one script. It reports whether an unread entry was read.
	MarkRead(ctx context.Context, user, author, post int64) (bool, error)
	// MarkAuthorRead does MarkRead for posts (the ids SQL just marked read) of author: one
	// script, one round trip. It returns how many unread entries it read.
	MarkAuthorRead(ctx context.Context, user, author int64, posts []int64) (int, error)
	// Unfollow deletes user's unread set of author.
	Unfollow(ctx context.Context, user, author int64) error
	// Built reports whether user's unread state was built from SQL.
	Built(ctx context.Context, user int64) (bool, error)
	// Rebuild merges a state read from SQL into user's keys and marks it built: read posts are
	// added to the read set and marked read in their author's unread set, unread entries are
	// added (never removed, so a concurrent fan-out is not lost) unless marked read, and
	// entries older than the follow (st.Since) are removed; one script. Sets of authors not in
	// st.Unread are left alone: UnreadCounts and UnreadPage are only asked about followed
	// authors.
	Rebuild(ctx context.Context, user int64, st UserState) error
	// UnreadPage returns up to limit of user's unread posts of author strictly after cursor,
	// newest first.
	UnreadPage(ctx context.Context, user, author int64, after Cursor, limit int) ([]PostRef, error)
	// UnreadCounts returns user's count of unread posts of each of authors (the followed
	// fan-out authors; zero counts absent): each unread set's size, in one round trip.
	UnreadCounts(ctx context.Context, user int64, authors []int64) (map[int64]int64, error)
	// ReadOf returns which of posts of author user has read: those in the read set or held
	// read in the user's unread set of author.
	ReadOf(ctx context.Context, user, author int64, posts []int64) (map[int64]bool, error)
	// AddRead adds posts to user's read set (a hybrid author's posts marked read).
	AddRead(ctx context.Context, user int64, posts []int64) error
	// HybridUnread counts and lists user's unread posts of a hybrid (big) author: the author
	// index from since on, minus the posts read (ReadOf); limit 0 counts only.
	HybridUnread(ctx context.Context, user, author int64, since time.Time, after Cursor, limit int) (count int64, page []PostRef, err error)
	// HybridCounts is HybridUnread's count for several hybrid authors of user at once (since:
	// author → user's follow time), in two round trips whatever their number: the indexes in
	// one pipeline, then which of their posts were read (ReadOf) in another. Authors whose
	// index does not exist are listed in missing instead; zero counts are absent.
	HybridCounts(ctx context.Context, user int64, since map[int64]time.Time) (counts map[int64]int64, missing []int64, err error)
}
