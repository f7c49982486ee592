package feed_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate/feed"
)

// countingSource is a feed.Source that counts the calls reaching the SQL source (each call is
// one SQL statement or transaction).
type countingSource struct {
	src feed.Source
	n   atomic.Int64
}

var _ feed.Source = (*countingSource)(nil)

// calls returns how many calls reached the source.
func (c *countingSource) calls() int64 { return c.n.Load() }

func (c *countingSource) CreatePost(ctx context.Context, p feed.Post) (feed.Post, error) {
	c.n.Add(1)
	return c.src.CreatePost(ctx, p)
}

func (c *countingSource) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	c.n.Add(1)
	return c.src.Posts(ctx, ids)
}

func (c *countingSource) AuthorPosts(ctx context.Context, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	c.n.Add(1)
	return c.src.AuthorPosts(ctx, author, after, limit)
}

func (c *countingSource) UnreadPosts(ctx context.Context, viewer, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	c.n.Add(1)
	return c.src.UnreadPosts(ctx, viewer, author, after, limit)
}

func (c *countingSource) UnreadCount(ctx context.Context, viewer, author int64) (int64, error) {
	c.n.Add(1)
	return c.src.UnreadCount(ctx, viewer, author)
}

func (c *countingSource) Follow(ctx context.Context, follower, author int64, since time.Time) (bool, error) {
	c.n.Add(1)
	return c.src.Follow(ctx, follower, author, since)
}

func (c *countingSource) Unfollow(ctx context.Context, follower, author int64) (bool, error) {
	c.n.Add(1)
	return c.src.Unfollow(ctx, follower, author)
}

func (c *countingSource) FollowOf(ctx context.Context, follower, author int64) (feed.Follow, error) {
	c.n.Add(1)
	return c.src.FollowOf(ctx, follower, author)
}

func (c *countingSource) Followers(ctx context.Context, author, after int64, limit int) ([]feed.Follow, error) {
	c.n.Add(1)
	return c.src.Followers(ctx, author, after, limit)
}

func (c *countingSource) FollowerCount(ctx context.Context, author int64) (int64, error) {
	c.n.Add(1)
	return c.src.FollowerCount(ctx, author)
}

func (c *countingSource) Users(ctx context.Context, after int64, limit int) ([]int64, error) {
	c.n.Add(1)
	return c.src.Users(ctx, after, limit)
}

func (c *countingSource) Following(ctx context.Context, user int64) ([]feed.Follow, error) {
	c.n.Add(1)
	return c.src.Following(ctx, user)
}

func (c *countingSource) MarkRead(ctx context.Context, user, post int64, at time.Time) (bool, error) {
	c.n.Add(1)
	return c.src.MarkRead(ctx, user, post, at)
}

func (c *countingSource) MarkAuthorRead(ctx context.Context, user, author int64, upTo, at time.Time) ([]int64, error) {
	c.n.Add(1)
	return c.src.MarkAuthorRead(ctx, user, author, upTo, at)
}

func (c *countingSource) ReadOf(ctx context.Context, user int64, posts []int64) (map[int64]bool, error) {
	c.n.Add(1)
	return c.src.ReadOf(ctx, user, posts)
}

func (c *countingSource) Like(ctx context.Context, user, post int64) (bool, error) {
	c.n.Add(1)
	return c.src.Like(ctx, user, post)
}

func (c *countingSource) Unlike(ctx context.Context, user, post int64) (bool, error) {
	c.n.Add(1)
	return c.src.Unlike(ctx, user, post)
}

func (c *countingSource) LikedOf(ctx context.Context, user int64, posts []int64) (map[int64]bool, error) {
	c.n.Add(1)
	return c.src.LikedOf(ctx, user, posts)
}

func (c *countingSource) Authors(ctx context.Context, after int64, limit int) ([]int64, error) {
	c.n.Add(1)
	return c.src.Authors(ctx, after, limit)
}

func (c *countingSource) MarkRepair(ctx context.Context, kind string, id int64) error {
	c.n.Add(1)
	return c.src.MarkRepair(ctx, kind, id)
}

func (c *countingSource) Repairs(ctx context.Context, limit int) ([]feed.Repair, error) {
	c.n.Add(1)
	return c.src.Repairs(ctx, limit)
}

func (c *countingSource) RepairDone(ctx context.Context, r feed.Repair) error {
	c.n.Add(1)
	return c.src.RepairDone(ctx, r)
}

func (c *countingSource) UnreadCounts(ctx context.Context, viewer int64) (map[int64]int64, error) {
	c.n.Add(1)
	return c.src.UnreadCounts(ctx, viewer)
}

func (c *countingSource) FollowingCounts(ctx context.Context, user, upTo int64) ([]feed.FollowCount, error) {
	c.n.Add(1)
	return c.src.FollowingCounts(ctx, user, upTo)
}
