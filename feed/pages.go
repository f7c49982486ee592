package feed

import (
	"context"

	"github.com/redstate/redstate"
)

// PostView is a post as a viewer sees it in a page.
type PostView struct {
	Post
	// IsLiked says whether the viewer likes the post.
	IsLiked bool `json:"isLike"`
}

// Page is one page of QueryPage.
type Page struct {
	Posts []PostView `json:"records"`
	// Next continues after the last post (zero when there is no more).
	Next Cursor `json:"-"`
	// HasMore says whether more posts follow.
	HasMore bool `json:"hasMore"`
}

// QueryPage is the seed's queryUserBlogByReadStatus with a cursor: up to size of author's
// posts (ALL) or of viewer's unread posts of author (UNREAD) strictly after cursor, newest
// first, each with whether viewer likes it. Redis answers when it can; a Redis failure, or a
// page Redis cannot fill, continues from SQL. Errors: EINVALID, EUNAVAILABLE (SQL).
func (s *Service) QueryPage(ctx context.Context, viewer, author int64, status string, after Cursor, size int) (Page, error) {
	if viewer <= 0 || author <= 0 {
		return Page{}, redstate.Errorf(redstate.EINVALID, "viewer and author ids must be > 0")
	}
	if size < 1 || size > MaxPageSize {
		return Page{}, redstate.Errorf(redstate.EINVALID, "size must be 1..%d, got %d", MaxPageSize, size)
	}
	var refs []PostRef
	var err error
	switch status {
	case StatusAll, "":
		refs, err = s.allPage(ctx, author, after, size+1)
	case StatusUnread:
		refs, err = s.unreadPage(ctx, viewer, author, after, size+1)
	default:
		return Page{}, redstate.Errorf(redstate.EINVALID, "readStatus must be ALL or UNREAD, got %q", status)
	}
	if err != nil {
		return Page{}, err
	}
	page := Page{HasMore: len(refs) > size}
	if page.HasMore {
		refs = refs[:size]
	}
	if len(refs) == 0 {
		page.Posts = []PostView{}
		return page, nil
	}
	ids := refIDs(refs)
	posts, err := s.posts(ctx, ids)
	if err != nil {
		return Page{}, err
	}
	liked, err := s.src.LikedOf(ctx, viewer, ids)
	if err != nil {
		return Page{}, err
	}
	for _, id := range ids {
		if p, ok := posts[id]; ok {
			page.Posts = append(page.Posts, PostView{Post: p, IsLiked: liked[id]})
		}
	}
	if page.HasMore {
		page.Next = cursorAfter(refs[len(refs)-1])
	}
	return page, nil
}

// allPage lists author's posts: the Redis index, continued from SQL when short.
func (s *Service) allPage(ctx context.Context, author int64, after Cursor, limit int) ([]PostRef, error) {
	if err := s.ensureAuthorIndex(ctx, author); err == nil {
		if refs, err := s.cache.AuthorPage(ctx, author, after, limit); err == nil {
			return continueFromSQL(refs, after, limit, func(c Cursor, n int) ([]PostRef, error) {
				return s.src.AuthorPosts(ctx, author, c, n)
			})
		}
	}
	return s.src.AuthorPosts(ctx, author, after, limit)
}

// unreadPage lists viewer's unread posts of author: Redis (built state, or hybrid
// computation), continued from SQL when short; SQL alone when Redis fails.
func (s *Service) unreadPage(ctx context.Context, viewer, author int64, after Cursor, limit int) ([]PostRef, error) {
	f, err := s.src.FollowOf(ctx, viewer, author)
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	fromSQL := func(c Cursor, n int) ([]PostRef, error) { return s.src.UnreadPosts(ctx, viewer, author, c, n) }
	hybrid, err := s.hybrid(ctx, author)
	if err != nil {
		return nil, err
	}
	var refs []PostRef
	if hybrid {
		if err = s.ensureAuthorIndex(ctx, author); err == nil {
			if err = s.ensureBuilt(ctx, viewer); err == nil {
				_, refs, err = s.cache.HybridUnread(ctx, viewer, author, f.Since, after, limit)
			}
		}
	} else if err = s.ensureBuilt(ctx, viewer); err == nil {
		refs, err = s.cache.UnreadPage(ctx, viewer, author, after, limit)
	}
	if err != nil {
		s.degraded("feed: Redis unavailable for an unread page; answering from SQL", err)
		return fromSQL(after, limit)
	}
	return continueFromSQL(refs, after, limit, fromSQL)
}

// continueFromSQL completes a short Redis page from SQL (posts past the Redis window).
func continueFromSQL(refs []PostRef, after Cursor, limit int, sql func(Cursor, int) ([]PostRef, error)) ([]PostRef, error) {
	if len(refs) >= limit {
		return refs, nil
	}
	if len(refs) > 0 {
		after = cursorAfter(refs[len(refs)-1])
	}
	more, err := sql(after, limit-len(refs))
	if err != nil {
		return refs, nil // Redis' part stands; SQL's absence only shortens the page
	}
	return append(refs, more...), nil
}

// QueryPageNumber is the seed's page-number form (current from 1): it walks cursor pages, so
// current × size is bounded by 10,000.
func (s *Service) QueryPageNumber(ctx context.Context, viewer, author int64, status string, current, size int) (Page, error) {
	if current < 1 || current*size > 10000 {
		return Page{}, redstate.Errorf(redstate.EINVALID, "current must be >= 1 and current × size at most 10000 (use the cursor for deeper pages)")
	}
	var c Cursor
	for i := 1; ; i++ {
		p, err := s.QueryPage(ctx, viewer, author, status, c, size)
		if err != nil || i == current || !p.HasMore {
			if i != current && err == nil {
				return Page{Posts: []PostView{}}, nil
			}
			return p, err
		}
		c = p.Next
	}
}
