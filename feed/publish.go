package feed

import (
	"context"

	"github.com/redstate/redstate"
)

// Publish is the seed's saveBlog: the post is stored in SQL (its truth), then cached and added
// to the author's index in one Redis round trip (Cache.PublishPost; the index is built from SQL
// if it does not exist), and fanned out to the followers (durably through Options.Enqueue when
// set). Cache failures do not fail it: they are marked for repair. Errors: EINVALID,
// EUNAVAILABLE (SQL).
func (s *Service) Publish(ctx context.Context, p Post) (Post, error) {
	if err := validatePost(p); err != nil {
		return Post{}, err
	}
	now := s.now()
	p.ID, p.Liked, p.CreateTime, p.UpdateTime = 0, 0, now, now
	post, err := s.src.CreatePost(ctx, p)
	if err != nil {
		return Post{}, err
	}
	s.announce(ctx, post)
	return post, nil
}

// Announce is Publish of a post another application already stored in SQL (feed.sql with
// owns-tables false: the seed's app saves the Blog row, then tells redstate): the post is read
// from SQL, cached, added to its author's index and fanned out, as Publish does after its
// insert. Announcing a post again changes nothing (index, cache and fan-out are idempotent).
// Errors: EINVALID, ENOTFOUND (no such post in SQL), EUNAVAILABLE (SQL).
func (s *Service) Announce(ctx context.Context, postID int64) (Post, error) {
	if postID <= 0 {
		return Post{}, redstate.Errorf(redstate.EINVALID, "post id must be > 0")
	}
	posts, err := s.src.Posts(ctx, []int64{postID})
	if err != nil {
		return Post{}, err
	}
	post, ok := posts[postID]
	if !ok {
		return Post{}, redstate.Errorf(redstate.ENOTFOUND, "post %d not found", postID)
	}
	s.announce(ctx, post)
	return post, nil
}

// announce caches a post stored in SQL, adds it to its author's index and fans it out;
// failures are marked for repair.
func (s *Service) announce(ctx context.Context, post Post) {
	indexed, err := s.cache.PublishPost(ctx, post)
	if err == nil && !indexed {
		err = s.buildAuthorIndex(ctx, post.AuthorID) // SQL holds the post: the build adds it
	}
	if err != nil {
		s.repairLater(ctx, RepairPost, post.ID, "publish", err) // its repair also re-caches the post
	} else {
		s.dropChanged(ctx, []Post{post})
	}
	if s.opts.Enqueue != nil {
		if err := s.opts.Enqueue(ctx, post.ID); err == nil {
			return
		} else {
			s.log.Warn("feed: fan-out could not be enqueued; fanning out now", "post", post.ID, "err", err)
		}
	}
	_ = s.fanOut(ctx, post) // a failure is marked for repair
}

// validatePost checks a post to publish.
func validatePost(p Post) error {
	switch {
	case p.AuthorID <= 0:
		return redstate.Errorf(redstate.EINVALID, "userId (the author) must be > 0")
	case p.Title == "" || len(p.Title) > 512:
		return redstate.Errorf(redstate.EINVALID, "title must be 1..512 bytes")
	case len(p.Content) > 256<<10:
		return redstate.Errorf(redstate.EINVALID, "content must be at most 256 KiB")
	case len(p.Images) > 32:
		return redstate.Errorf(redstate.EINVALID, "at most 32 images")
	}
	return nil
}
