package feed

import (
	"context"
	"time"

	"github.com/redstate/redstate"
)

// ensureAuthorIndex builds author's index from SQL when Redis has none.
func (s *Service) ensureAuthorIndex(ctx context.Context, author int64) error {
	ok, err := s.cache.HasAuthorIndex(ctx, author)
	if err != nil || ok {
		return err
	}
	return s.buildAuthorIndex(ctx, author)
}

// buildAuthorIndex builds author's index from SQL; a build cut short by Redis is marked for
// repair (the partial index exists, so it would not be built again).
func (s *Service) buildAuthorIndex(ctx context.Context, author int64) error {
	if err := s.mergeAuthorIndex(ctx, author); err != nil {
		if redstate.IsCode(err, redstate.EUNAVAILABLE) {
			s.repairLater(ctx, RepairAuthor, author, "build author index", err)
		}
		return err
	}
	return nil
}

// mergeAuthorIndex adds every post of author in SQL to the author's Redis index.
func (s *Service) mergeAuthorIndex(ctx context.Context, author int64) error {
	fetch := func(c Cursor, n int) ([]PostRef, error) { return s.src.AuthorPosts(ctx, author, c, n) }
	return keyset(pageSize, fetch, cursorAfter, func(refs []PostRef) (bool, error) {
		return true, s.cache.SetAuthorIndex(ctx, author, refs)
	})
}

// ensureBuilt rebuilds user's Redis unread state from SQL when it is not built.
func (s *Service) ensureBuilt(ctx context.Context, user int64) error {
	built, err := s.cache.Built(ctx, user)
	if err != nil || built {
		return err
	}
	return s.mergeUser(ctx, user)
}

// mergeUser merges user's unread state from SQL into Redis (the lazy rebuild, also of a built
// state): entries left from an earlier follow are removed, read posts marked read, missing
// ones added.
func (s *Service) mergeUser(ctx context.Context, user int64) error {
	st, err := s.stateFromSQL(ctx, user)
	if err != nil {
		return err
	}
	return s.cache.Rebuild(ctx, user, st)
}

// RebuildUser replaces user's Redis unread state with the one SQL implies (`feed rebuild`).
// Errors: EINVALID, EUNAVAILABLE.
func (s *Service) RebuildUser(ctx context.Context, user int64) error {
	if user <= 0 {
		return redstate.Errorf(redstate.EINVALID, "user id must be > 0")
	}
	st, err := s.stateFromSQL(ctx, user)
	if err != nil {
		return err
	}
	st.Replace = true
	return s.cache.Rebuild(ctx, user, st)
}

// stateFromSQL reads user's unread state from SQL: per followed fan-out author the unread
// posts, and the read marks of every followed author's posts since the follow.
func (s *Service) stateFromSQL(ctx context.Context, user int64) (UserState, error) {
	follows, err := s.src.FollowingCounts(ctx, user, s.hybridCountCap())
	if err != nil {
		return UserState{}, err
	}
	st := UserState{Unread: map[int64][]PostRef{}, Since: map[int64]time.Time{}, Read: map[int64][]int64{}}
	for _, f := range follows {
		refs, err := s.allSince(ctx, f.Author, f.Since)
		if err != nil {
			return UserState{}, err
		}
		read, err := s.readOf(ctx, user, refs)
		if err != nil {
			return UserState{}, err
		}
		// Every read mark goes to the read set, also of fan-out authors, and is marked read in
		// the unread set of a fan-out author (also a post read while Redis was unreachable).
		if len(read) > 0 {
			st.Read[f.Author] = read
		}
		if s.isHybrid(f.Followers) {
			st.Hybrid = append(st.Hybrid, f.Author)
			continue
		}
		isRead := make(map[int64]bool, len(read))
		for _, id := range read {
			isRead[id] = true
		}
		unread := []PostRef{}
		for _, r := range refs {
			if !isRead[r.ID] {
				unread = append(unread, r)
			}
		}
		st.Unread[f.Author] = unread
		st.Since[f.Author] = f.Since
	}
	return st, nil
}

// allSince lists every post of author created at or after since, from SQL.
func (s *Service) allSince(ctx context.Context, author int64, since time.Time) ([]PostRef, error) {
	var out []PostRef
	fetch := func(c Cursor, n int) ([]PostRef, error) { return s.src.AuthorPosts(ctx, author, c, n) }
	err := keyset(pageSize, fetch, cursorAfter, func(refs []PostRef) (bool, error) {
		for _, r := range refs {
			if r.CreateTime.Before(since) {
				return false, nil
			}
			out = append(out, r)
		}
		return true, nil
	})
	return out, err
}

// readOf returns the ids among refs user has read, from SQL (in chunks of pageSize).
func (s *Service) readOf(ctx context.Context, user int64, refs []PostRef) ([]int64, error) {
	var out []int64
	for i := 0; i < len(refs); i += pageSize {
		ids := refIDs(refs[i:min(i+pageSize, len(refs))])
		read, err := s.src.ReadOf(ctx, user, ids)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if read[id] {
				out = append(out, id)
			}
		}
	}
	return out, nil
}
