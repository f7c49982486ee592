package feed

import (
	"context"
	"time"
)

// Source is the SQL source of truth: posts, follows, read marks and likes.
// feed/sqlfeed implements it on SQLite and PostgreSQL (package sqldb), checked by
// feedtest.RunSourceSuite on both. Implementations are safe for concurrent use, also from
// several processes sharing the database.
//
// Every error is a *redstate.Error: EINVALID (ids <= 0, limit out of 1..1000, a post without
// author or title), ENOTFOUND, EUNAVAILABLE (the database does not answer), EINTERNAL.
// Times are stored with microsecond precision and returned in UTC.
type Source interface {
	// CreatePost inserts p (ID 0: the Source assigns it; CreateTime/UpdateTime zero: now)
	// and returns it as stored. Errors: EINVALID.
	CreatePost(ctx context.Context, p Post) (Post, error)

	// Posts returns the posts with the given ids that exist (missing ids are absent from the
	// map). At most 1000 ids. Errors: EINVALID.
	Posts(ctx context.Context, ids []int64) (map[int64]Post, error)

	// AuthorPosts returns up to limit of author's posts strictly after cursor in newest-first
	// order (create time, then id, descending), as refs. Keyset pagination: never OFFSET.
	AuthorPosts(ctx context.Context, author int64, after Cursor, limit int) ([]PostRef, error)

	// UnreadPosts returns up to limit of author's posts that viewer has not read and that were
	// created at or after viewer's follow of author (none if viewer does not follow author),
	// strictly after cursor, newest first: the SQL truth of the unread set.
	UnreadPosts(ctx context.Context, viewer, author int64, after Cursor, limit int) ([]PostRef, error)

	// UnreadCount is the number of posts UnreadPosts would list without a limit.
	UnreadCount(ctx context.Context, viewer, author int64) (int64, error)

	// UnreadCounts is UnreadCount of every author viewer follows, in one grouped query; authors
	// with no unread post are absent.
	UnreadCounts(ctx context.Context, viewer int64) (map[int64]int64, error)

	// Follow records that follower follows author since since; following again keeps the
	// original since and reports created false. Errors: EINVALID (follower == author).
	Follow(ctx context.Context, follower, author int64, since time.Time) (created bool, err error)

	// Unfollow removes the relation and reports whether it existed.
	Unfollow(ctx context.Context, follower, author int64) (removed bool, err error)

	// FollowOf returns the relation. Errors: ENOTFOUND.
	FollowOf(ctx context.Context, follower, author int64) (Follow, error)

	// Followers returns up to limit of author's followers with follower id > after, ascending
	// (keyset pages for fan-out).
	Followers(ctx context.Context, author, after int64, limit int) ([]Follow, error)

	// FollowerCount is the number of author's followers.
	FollowerCount(ctx context.Context, author int64) (int64, error)

	// Users returns up to limit distinct users who follow someone, with id > after, ascending
	// (keyset pages for rebuild and verify).
	Users(ctx context.Context, after int64, limit int) ([]int64, error)

	// Following returns every author user follows.
	Following(ctx context.Context, user int64) ([]Follow, error)

	// FollowingCounts is Following with each author's follower count and whether the author has
	// posts, in one query: a count above upTo is reported as upTo (so deciding "more than N
	// followers" costs at most N+1 index entries per author); upTo <= 0 counts exactly.
	// Errors: EINVALID.
	FollowingCounts(ctx context.Context, user, upTo int64) ([]FollowCount, error)

	// MarkRead records that user read post at at; marking again keeps the first time and
	// reports created false. Errors: ENOTFOUND (no such post).
	MarkRead(ctx context.Context, user, post int64, at time.Time) (created bool, err error)

	// MarkAuthorRead marks every post of author created up to upTo as read by user (one
	// statement) and returns the ids it newly marked.
	MarkAuthorRead(ctx context.Context, user, author int64, upTo, at time.Time) ([]int64, error)

	// ReadOf returns which of posts user has read. At most 1000 ids.
	ReadOf(ctx context.Context, user int64, posts []int64) (map[int64]bool, error)

	// Like records that user likes post and increments the post's liked count in the same
	// transaction, only if the like is new (reports whether it was). Unlike is the reverse.
	// Errors: ENOTFOUND (no such post).
	Like(ctx context.Context, user, post int64) (changed bool, err error)
	Unlike(ctx context.Context, user, post int64) (changed bool, err error)

	// LikedOf returns which of posts user likes. At most 1000 ids.
	LikedOf(ctx context.Context, user int64, posts []int64) (map[int64]bool, error)

	// Authors returns up to limit distinct authors of posts with id > after, ascending (keyset
	// pages for rebuild and verify of author indexes and post caches).
	Authors(ctx context.Context, after int64, limit int) ([]int64, error)

	// MarkRepair records durably that the Redis state of kind (RepairUser, RepairPost,
	// RepairAuthor, RepairPostCache) id may have missed a write; marking again renews the
	// mark's generation. Errors: EINVALID.
	MarkRepair(ctx context.Context, kind string, id int64) error

	// Repairs returns up to limit marks, oldest generation first.
	Repairs(ctx context.Context, limit int) ([]Repair, error)

	// RepairDone removes r's mark if it still has r's generation (a mark renewed meanwhile
	// stays, so the write that renewed it is repaired too).
	RepairDone(ctx context.Context, r Repair) error
}

// FollowCount is a follow relation with the author's follower count (Source.FollowingCounts).
type FollowCount struct {
	Follow
	// Followers is the author's follower count (at most the upTo asked for).
	Followers int64 `json:"followers"`
	// HasPosts says whether the author had posts.
	HasPosts bool `json:"hasPosts"`
}
