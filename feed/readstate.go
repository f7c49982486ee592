package feed

import (
	"context"

	"github.com/redstate/redstate"
)

// MarkRead is the seed's markBlogAsRead for viewer: the read mark goes to SQL, then the Redis
// script marks it read in the unread set, which holds the count (idempotent, never negative). A SQL
// error after ctx ended may hide a committed mark: the viewer is then marked for repair, as
// after every such error of MarkAuthorRead, Follow, Unfollow and Like.
// Errors: EINVALID, ENOTFOUND (no such post), EUNAVAILABLE (SQL).
func (s *Service) MarkRead(ctx context.Context, viewer, postID int64) error {
	if viewer <= 0 || postID <= 0 {
		return redstate.Errorf(redstate.EINVALID, "viewer and post ids must be > 0")
	}
	p, err := s.post(ctx, postID)
	if err != nil {
		return err
	}
	if _, err := s.src.MarkRead(ctx, viewer, postID, s.now()); err != nil {
		s.repairIfCut(ctx, err, RepairUser, viewer, "mark read")
		return err
	}
	if _, err := s.cache.MarkRead(ctx, viewer, p.AuthorID, postID); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "mark read", err)
	}
	s.notify(ctx, viewer)
	return nil
}

// MarkAuthorRead marks every post of author read for viewer (SQL one statement returning the
// ids it marked, Redis one script for exactly those ids, so a post published meanwhile is not
// lost) and returns how many posts were newly marked. Errors: EINVALID, EUNAVAILABLE.
func (s *Service) MarkAuthorRead(ctx context.Context, viewer, author int64) (int64, error) {
	if viewer <= 0 || author <= 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "viewer and author ids must be > 0")
	}
	now := s.now()
	marked, err := s.src.MarkAuthorRead(ctx, viewer, author, now, now)
	if err != nil {
		s.repairIfCut(ctx, err, RepairUser, viewer, "mark author read")
		return 0, err
	}
	n := int64(len(marked))
	if _, err := s.cache.MarkAuthorRead(ctx, viewer, author, marked); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "mark author read", err)
	}
	s.notify(ctx, viewer)
	return n, nil
}

// Follow makes viewer follow author from now on and notifies viewer (so that every instance
// re-reads the viewer's follow list for live counts). Errors: EINVALID, EUNAVAILABLE.
func (s *Service) Follow(ctx context.Context, viewer, author int64) (bool, error) {
	if viewer <= 0 || author <= 0 {
		return false, redstate.Errorf(redstate.EINVALID, "viewer and author ids must be > 0")
	}
	created, err := s.src.Follow(ctx, viewer, author, s.now())
	if err != nil || !created {
		s.repairIfCut(ctx, err, RepairUser, viewer, "follow")
		return created, err
	}
	// A new follow starts with no unread posts: clear any state left from an earlier follow.
	if err := s.cache.Unfollow(ctx, viewer, author); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "follow", err)
	}
	s.notify(ctx, viewer)
	return true, nil
}

// Unfollow ends viewer's follow of author and removes viewer's unread state of author.
// Errors: EINVALID, EUNAVAILABLE.
func (s *Service) Unfollow(ctx context.Context, viewer, author int64) (bool, error) {
	if viewer <= 0 || author <= 0 {
		return false, redstate.Errorf(redstate.EINVALID, "viewer and author ids must be > 0")
	}
	removed, err := s.src.Unfollow(ctx, viewer, author)
	if err != nil {
		s.repairIfCut(ctx, err, RepairUser, viewer, "unfollow")
		return false, err
	}
	if err := s.cache.Unfollow(ctx, viewer, author); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "unfollow", err)
	}
	s.notify(ctx, viewer)
	return removed, nil
}

// FollowsChanged brings viewer's Redis state in line with the follows in SQL after another
// application changed them (feed.sql with owns-tables false: the app inserts or deletes the
// follow row, then tells redstate): the state is merged from SQL as the lazy rebuild does
// (entries of authors no longer followed, and older than a follow, go; posts since a follow
// that were fanned out stay), and viewer's live counts are notified. Calling it again changes
// nothing. A Redis failure is marked for repair, not returned. Errors: EINVALID, EUNAVAILABLE
// (SQL).
func (s *Service) FollowsChanged(ctx context.Context, viewer int64) error {
	if viewer <= 0 {
		return redstate.Errorf(redstate.EINVALID, "viewer id must be > 0")
	}
	st, err := s.stateFromSQL(ctx, viewer)
	if err != nil {
		return err
	}
	if err := s.cache.Rebuild(ctx, viewer, st); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "follows changed", err)
	}
	s.notify(ctx, viewer)
	return nil
}

// Like records viewer's like of post (SQL, with the post's liked count) and deletes the cached
// post (the next read caches it from SQL; see fillPosts), so the cached liked count never
// misses a like. Unlike is the reverse. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
func (s *Service) Like(ctx context.Context, viewer, postID int64, like bool) (bool, error) {
	if viewer <= 0 || postID <= 0 {
		return false, redstate.Errorf(redstate.EINVALID, "viewer and post ids must be > 0")
	}
	var changed bool
	var err error
	if like {
		changed, err = s.src.Like(ctx, viewer, postID)
	} else {
		changed, err = s.src.Unlike(ctx, viewer, postID)
	}
	if err != nil || !changed {
		s.repairIfCut(ctx, err, RepairPostCache, postID, "like")
		return changed, err
	}
	if err := s.cache.DeletePosts(ctx, []int64{postID}); err != nil {
		s.repairLater(ctx, RepairPostCache, postID, "like", err)
	}
	return true, nil
}
