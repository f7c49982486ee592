package feed

import (
	"context"

	"github.com/redstate/redstate"
)

// Drift is one difference VerifyUser found between Redis and SQL.
type Drift struct {
	User   int64 `json:"user"`
	Author int64 `json:"author"`
	// Count is Redis' count, Listed the posts its unread set holds, SQL the truth (the sets
	// may also differ at equal sizes: a drift is reported then too).
	Count  int64 `json:"count"`
	Listed int64 `json:"listed"`
	SQL    int64 `json:"sql"`
}

// VerifyUser compares user's unread state in Redis (count and listed posts per followed
// author; an unbuilt state is compared as it would be served, after its rebuild) with SQL
// (`feed verify`). Errors: EINVALID, EUNAVAILABLE.
func (s *Service) VerifyUser(ctx context.Context, user int64) ([]Drift, error) {
	follows, err := s.src.FollowingCounts(ctx, user, s.hybridCountCap())
	if err != nil {
		return nil, err
	}
	counts, err := s.countsOf(ctx, user, func() ([]FollowCount, error) { return follows, nil })
	if err != nil {
		return nil, err
	}
	truths, err := s.src.UnreadCounts(ctx, user)
	if err != nil {
		return nil, err
	}
	var drifts []Drift
	for _, f := range follows {
		truth := truths[f.Author]
		listed := counts[f.Author]
		same := true
		if !s.isHybrid(f.Followers) {
			inRedis, err := collectRefs(func(c Cursor, n int) ([]PostRef, error) { return s.cache.UnreadPage(ctx, user, f.Author, c, n) })
			if err != nil {
				return nil, err
			}
			inSQL, err := collectRefs(func(c Cursor, n int) ([]PostRef, error) { return s.src.UnreadPosts(ctx, user, f.Author, c, n) })
			if err != nil {
				return nil, err
			}
			listed = int64(len(inRedis))
			same = sameIDs(inRedis, inSQL)
		}
		if counts[f.Author] != truth || listed != truth || !same {
			drifts = append(drifts, Drift{User: user, Author: f.Author, Count: counts[f.Author], Listed: listed, SQL: truth})
		}
	}
	return drifts, nil
}

// sameIDs reports whether a and b list the same post ids.
func sameIDs(a, b []PostRef) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[int64]bool, len(a))
	for _, r := range a {
		seen[r.ID] = true
	}
	for _, r := range b {
		if !seen[r.ID] {
			return false
		}
	}
	return true
}

// RebuildAuthor makes author's Redis index hold every post of the author in SQL and refreshes
// the cached copies of those posts from SQL (`feed rebuild`). Errors: EINVALID, EUNAVAILABLE.
func (s *Service) RebuildAuthor(ctx context.Context, author int64) error {
	if author <= 0 {
		return redstate.Errorf(redstate.EINVALID, "author id must be > 0")
	}
	if err := s.mergeAuthorIndex(ctx, author); err != nil {
		return err
	}
	fetch := func(c Cursor, n int) ([]PostRef, error) { return s.src.AuthorPosts(ctx, author, c, n) }
	return keyset(pageSize, fetch, cursorAfter, func(refs []PostRef) (bool, error) {
		return true, s.refreshPosts(ctx, refIDs(refs))
	})
}

// AuthorDrift is what VerifyAuthor found different between Redis and SQL for one author.
type AuthorDrift struct {
	Author int64 `json:"author"`
	// Missing are posts in SQL that the author's Redis index lacks (or holds at another time);
	// Extra are index entries SQL does not have.
	Missing []int64 `json:"missing,omitempty"`
	Extra   []int64 `json:"extra,omitempty"`
	// Stale are posts whose cached copy differs from SQL (liked count or another field).
	Stale []int64 `json:"stale,omitempty"`
}

// VerifyAuthor compares author's Redis index (when it exists: a missing one is built from SQL
// on first use) and the cached copies of the author's posts with SQL (`feed verify`). It
// returns nil when they agree. Errors: EINVALID, EUNAVAILABLE.
func (s *Service) VerifyAuthor(ctx context.Context, author int64) (*AuthorDrift, error) {
	if author <= 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "author id must be > 0")
	}
	inSQL, err := collectRefs(func(c Cursor, n int) ([]PostRef, error) { return s.src.AuthorPosts(ctx, author, c, n) })
	if err != nil {
		return nil, err
	}
	d := AuthorDrift{Author: author}
	has, err := s.cache.HasAuthorIndex(ctx, author)
	if err != nil {
		return nil, err
	}
	if has {
		inRedis, err := collectRefs(func(c Cursor, n int) ([]PostRef, error) { return s.cache.AuthorPage(ctx, author, c, n) })
		if err != nil {
			return nil, err
		}
		d.Missing, d.Extra = diffRefs(inSQL, inRedis)
	}
	for i := 0; i < len(inSQL); i += pageSize {
		ids := refIDs(inSQL[i:min(i+pageSize, len(inSQL))])
		cached, err := s.cache.GetPosts(ctx, ids)
		if err != nil {
			return nil, err
		}
		truth, err := s.src.Posts(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if c, ok := cached[id]; ok && !samePost(c, truth[id]) {
				d.Stale = append(d.Stale, id)
			}
		}
	}
	if len(d.Missing)+len(d.Extra)+len(d.Stale) == 0 {
		return nil, nil
	}
	return &d, nil
}

// diffRefs returns the ids of want that got lacks (or holds at another millisecond) and the
// ids of got that want lacks.
func diffRefs(want, got []PostRef) (missing, extra []int64) {
	at := make(map[int64]int64, len(got))
	for _, r := range got {
		at[r.ID] = r.CreateTime.UnixMilli()
	}
	inWant := make(map[int64]bool, len(want))
	for _, r := range want {
		inWant[r.ID] = true
		if t, ok := at[r.ID]; !ok || t != r.CreateTime.UnixMilli() {
			missing = append(missing, r.ID)
		}
	}
	for _, r := range got {
		if !inWant[r.ID] {
			extra = append(extra, r.ID)
		}
	}
	return missing, extra
}

// samePost reports whether a cached post equals its SQL row.
func samePost(a, b Post) bool {
	if a.ID != b.ID || a.AuthorID != b.AuthorID || a.Title != b.Title || a.Content != b.Content || a.Liked != b.Liked ||
		!a.CreateTime.Equal(b.CreateTime) || !a.UpdateTime.Equal(b.UpdateTime) || len(a.Images) != len(b.Images) {
		return false
	}
	for i := range a.Images {
		if a.Images[i] != b.Images[i] {
			return false
		}
	}
	return true
}

// EachUser calls f for every user who follows someone, in id order (keyset pages of SQL), for
// rebuild and verify; it stops at the first error.
func (s *Service) EachUser(ctx context.Context, f func(user int64) error) error {
	return s.eachID(ctx, s.src.Users, f)
}

// EachAuthor calls f for every author who has posts, in id order (keyset pages of SQL), for
// rebuild and verify; it stops at the first error.
func (s *Service) EachAuthor(ctx context.Context, f func(author int64) error) error {
	return s.eachID(ctx, s.src.Authors, f)
}

// eachID calls f for every id of the keyset pages of list.
func (s *Service) eachID(ctx context.Context, list func(ctx context.Context, after int64, limit int) ([]int64, error), f func(int64) error) error {
	fetch := func(after int64, n int) ([]int64, error) { return list(ctx, after, n) }
	return keyset(pageSize, fetch, idKey, func(ids []int64) (bool, error) {
		for _, id := range ids {
			if err := f(id); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}
