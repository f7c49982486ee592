package feed

import (
	"context"
	"maps"
	"time"

	"github.com/redstate/redstate"
)

// UnreadCounts returns viewer's unread count per followed author (zero counts absent) and the
// total: fan-out authors from the sizes of their Redis unread sets, hybrid authors computed
// from their Redis indexes; all from SQL (one grouped query) when Redis fails. Its SQL part is one query (the
// follow list with the follower counts that tell hybrid authors), none while the viewer is
// subscribed and nothing changed (followCache). Errors: EINVALID, EUNAVAILABLE (SQL).
func (s *Service) UnreadCounts(ctx context.Context, viewer int64) (map[int64]int64, int64, error) {
	if viewer <= 0 {
		return nil, 0, redstate.Errorf(redstate.EINVALID, "viewer id must be > 0")
	}
	counts, err := s.redisCounts(ctx, viewer)
	if err != nil {
		s.degraded("feed: Redis unavailable for unread counts; answering from SQL", err)
		s.follows.invalidate(viewer) // notifications may be lost while Redis fails
		if counts, err = s.src.UnreadCounts(ctx, viewer); err != nil {
			return nil, 0, err
		}
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	return counts, total, nil
}

// redisCounts is UnreadCounts from Redis, with viewer's follow list from the follow cache or
// SQL.
func (s *Service) redisCounts(ctx context.Context, viewer int64) (map[int64]int64, error) {
	return s.countsOf(ctx, viewer, func() ([]FollowCount, error) { return s.following(ctx, viewer) })
}

// following returns viewer's follow list with follower counts: from the follow cache while
// viewer is subscribed and no notification came, else from SQL (one query).
func (s *Service) following(ctx context.Context, viewer int64) ([]FollowCount, error) {
	follows, gen, ok := s.follows.get(viewer)
	if ok {
		return follows, nil
	}
	follows, err := s.src.FollowingCounts(ctx, viewer, s.hybridCountCap())
	if err != nil {
		return nil, err
	}
	s.follows.put(viewer, gen, follows)
	return follows, nil
}

// countsOf reads viewer's counts from Redis (building the state from SQL first if needed):
// the sizes of the unread sets of the followed fan-out authors, and the counts of every
// hybrid author of the follow list computed from their indexes (Cache.HybridCounts: two round
// trips for all of them). Redis is asked first (the built check), so a failing Redis costs no
// SQL query before the SQL answer.
func (s *Service) countsOf(ctx context.Context, viewer int64, following func() ([]FollowCount, error)) (map[int64]int64, error) {
	if err := s.ensureBuilt(ctx, viewer); err != nil {
		return nil, err
	}
	follows, err := following()
	if err != nil {
		return nil, err
	}
	var fanned []int64
	since, hasPosts := map[int64]time.Time{}, map[int64]bool{}
	for _, f := range follows {
		if s.isHybrid(f.Followers) {
			since[f.Author], hasPosts[f.Author] = f.Since, f.HasPosts
		} else {
			fanned = append(fanned, f.Author)
		}
	}
	counts, err := s.cache.UnreadCounts(ctx, viewer, fanned)
	if err != nil {
		return nil, err
	}
	if len(since) == 0 {
		return counts, nil
	}
	hybrid, missing, err := s.cache.HybridCounts(ctx, viewer, since)
	if err != nil {
		return nil, err
	}
	// An index that does not exist is built from SQL, unless the author has no posts (nothing to
	// index: no SQL query; a publish builds the index).
	built := map[int64]time.Time{}
	for _, a := range missing {
		if hasPosts[a] {
			if err := s.buildAuthorIndex(ctx, a); err != nil {
				return nil, err
			}
			built[a] = since[a]
		}
	}
	if len(built) > 0 {
		more, _, err := s.cache.HybridCounts(ctx, viewer, built)
		if err != nil {
			return nil, err
		}
		maps.Copy(hybrid, more)
	}
	for a := range since {
		if n := hybrid[a]; n > 0 {
			counts[a] = n
		} else {
			delete(counts, a)
		}
	}
	return counts, nil
}
