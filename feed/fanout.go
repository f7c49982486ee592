package feed

import (
	"context"
	"math"

	"github.com/redstate/redstate"
)

// FanOutPost adds post to the unread state of every follower of its author, page by page of
// followers (FanOutBatch, keyset pages from SQL), each page one pipeline of scripts. Running it
// again (a retried job after a crash) changes nothing already done: a count moves only when
// its set changed. Hybrid authors are skipped. Errors: ENOTFOUND, EUNAVAILABLE.
func (s *Service) FanOutPost(ctx context.Context, postID int64) error {
	posts, err := s.src.Posts(ctx, []int64{postID})
	if err != nil {
		return err
	}
	post, ok := posts[postID]
	if !ok {
		return redstate.Errorf(redstate.ENOTFOUND, "post %d not found", postID)
	}
	return s.fanOut(ctx, post)
}

// fanOut is FanOutPost of a post read from SQL; any failure (Redis, or SQL and a context that
// ended before the followers were read: a publish whose caller went away) is also marked for
// repair, so a fan-out job dead-lettered during an outage, or one a publish could neither
// enqueue nor run, is still done. Retries are the durable queue's and the repair mark's:
// nothing is kept in memory.
func (s *Service) fanOut(ctx context.Context, post Post) error {
	err := s.fanOutFollowers(ctx, post)
	if err != nil {
		s.repairLater(ctx, RepairPost, post.ID, "fan-out", err)
	}
	return err
}

// fanOutFollowers adds post to the unread state of every follower who followed its author
// when it was published (none for a hybrid author), one page of followers at a time.
func (s *Service) fanOutFollowers(ctx context.Context, post Post) error {
	hybrid, err := s.hybrid(ctx, post.AuthorID)
	if err != nil || hybrid {
		return err
	}
	ref := PostRef{ID: post.ID, CreateTime: post.CreateTime}
	fetch := func(after int64, limit int) ([]Follow, error) {
		return s.src.Followers(ctx, post.AuthorID, after, limit)
	}
	return keyset(s.opts.FanOutBatch, fetch, followerKey, func(page []Follow) (bool, error) {
		followers := make([]int64, 0, len(page))
		for _, f := range page {
			if !f.Since.After(post.CreateTime) { // followed when the post was published
				followers = append(followers, f.Follower)
			}
		}
		if _, err := s.cache.FanOut(ctx, post.AuthorID, ref, followers); err != nil {
			return false, err
		}
		s.notify(ctx, followers...)
		return true, nil
	})
}

// hybrid reports whether author has more followers than the threshold (one SQL query).
func (s *Service) hybrid(ctx context.Context, author int64) (bool, error) {
	n, err := s.src.FollowerCount(ctx, author)
	return s.isHybrid(n), err
}

// isHybrid reports whether an author with followers followers is hybrid.
func (s *Service) isHybrid(followers int64) bool { return followers > s.opts.HybridThreshold }

// hybridCountCap is the upTo of Source.FollowingCounts: counting followers beyond the threshold
// does not change whether an author is hybrid.
func (s *Service) hybridCountCap() int64 {
	if s.opts.HybridThreshold < 0 {
		return 1
	}
	return min(s.opts.HybridThreshold, math.MaxInt64-1) + 1
}
