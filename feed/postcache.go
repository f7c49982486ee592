package feed

import (
	"context"

	"github.com/redstate/redstate"
)

// post returns one post, from the cache or SQL. Errors: ENOTFOUND, EUNAVAILABLE.
func (s *Service) post(ctx context.Context, id int64) (Post, error) {
	posts, err := s.posts(ctx, []int64{id})
	if err != nil {
		return Post{}, err
	}
	p, ok := posts[id]
	if !ok {
		return Post{}, redstate.Errorf(redstate.ENOTFOUND, "post %d not found", id)
	}
	return p, nil
}

// posts returns the posts among ids: cached ones in one pipeline, misses from SQL in one query
// (and cached again).
func (s *Service) posts(ctx context.Context, ids []int64) (map[int64]Post, error) {
	got, err := s.cache.GetPosts(ctx, ids)
	if err != nil {
		got = map[int64]Post{}
	}
	var miss []int64
	for _, id := range ids {
		if _, ok := got[id]; !ok {
			miss = append(miss, id)
		}
	}
	if len(miss) == 0 {
		return got, nil
	}
	loaded, serr := s.src.Posts(ctx, miss)
	if serr != nil {
		return nil, serr
	}
	refill := make([]Post, 0, len(loaded))
	for id, p := range loaded {
		got[id] = p
		refill = append(refill, p)
	}
	if err == nil {
		s.fillPosts(ctx, refill)
	}
	return got, nil
}

// fillPosts caches posts read from SQL where they are not cached, then drops the copies that
// changed meanwhile (dropChanged).
func (s *Service) fillPosts(ctx context.Context, posts []Post) {
	if len(posts) == 0 {
		return
	}
	if err := s.cache.PutPosts(ctx, posts); err != nil {
		// Some copies may have been written before the failure: check them when Redis answers.
		for _, p := range posts {
			s.repairLater(ctx, RepairPostCache, p.ID, "cache posts", err)
		}
		return
	}
	s.dropChanged(ctx, posts)
}

// dropChanged reads posts, just cached, from SQL again and deletes the copies that changed
// meanwhile: a like committed between the first read and the cache write (its delete found
// nothing to delete) cannot leave an old liked count cached. A cached counter thus differs
// from SQL only while a write is in flight.
func (s *Service) dropChanged(ctx context.Context, posts []Post) {
	ids := make([]int64, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	now, err := s.src.Posts(ctx, ids)
	var stale []int64
	for _, p := range posts {
		if q, ok := now[p.ID]; err != nil || !ok || q.Liked != p.Liked || !q.UpdateTime.Equal(p.UpdateTime) {
			stale = append(stale, p.ID)
		}
	}
	if err := s.cache.DeletePosts(ctx, stale); err != nil {
		for _, id := range stale {
			s.repairLater(ctx, RepairPostCache, id, "delete changed posts", err)
		}
	}
}

// refreshPosts deletes the cached copies of ids and caches them again from SQL.
func (s *Service) refreshPosts(ctx context.Context, ids []int64) error {
	if err := s.cache.DeletePosts(ctx, ids); err != nil {
		return err
	}
	posts, err := s.src.Posts(ctx, ids)
	if err != nil {
		return err
	}
	list := make([]Post, 0, len(posts))
	for _, id := range ids {
		if p, ok := posts[id]; ok {
			list = append(list, p)
		}
	}
	s.fillPosts(ctx, list)
	return nil
}
