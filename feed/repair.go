package feed

import (
	"context"
	"time"

	"github.com/redstate/redstate"
)

// Kinds of repair marks (Source.MarkRepair): which part of the Redis state may have missed a
// write that SQL has.
const (
	// RepairUser: the user's unread state (read set, unread sets, counts) is rebuilt from SQL
	// (a read, mark-all-read, follow or unfollow missed Redis).
	RepairUser = "user"
	// RepairPost: the post is added to its author's index, its cache is refreshed and it is
	// fanned out again (a publish or a fan-out missed Redis).
	RepairPost = "post"
	// RepairAuthor: the author's index is merged from SQL (building it missed Redis).
	RepairAuthor = "author"
	// RepairPostCache: the post's cache is deleted and refilled from SQL (a like or unlike
	// could not delete it).
	RepairPostCache = "post-cache"
)

// ValidRepairKind checks a repair kind. Errors: EINVALID.
func ValidRepairKind(kind string) error {
	switch kind {
	case RepairUser, RepairPost, RepairAuthor, RepairPostCache:
		return nil
	}
	return redstate.Errorf(redstate.EINVALID, "unknown feed repair kind %q", kind)
}

// Repair is one durable repair mark: Kind and ID name what to repair, Gen is the mark's
// generation (renewed when the same thing is marked again).
type Repair struct {
	Kind string `json:"kind"`
	ID   int64  `json:"id"`
	Gen  int64  `json:"gen"`
}

// DefaultRepairInterval is how often Run looks for repair marks when Options.RepairInterval is
// zero.
const DefaultRepairInterval = 2 * time.Second

// repairBatch is how many marks one SQL read of RepairOnce takes, maxRepairBatches how many
// reads one round makes at most (the rest waits for the next round).
const (
	repairBatch      = 100
	maxRepairBatches = 50
)

// repairLater logs a Redis write that failed and marks what it should have changed durably in
// SQL, so that Run repairs it when Redis answers, also after this process died.
func (s *Service) repairLater(ctx context.Context, kind string, id int64, op string, err error) {
	s.log.Warn("feed: Redis write failed; SQL has it, the Redis state will be repaired when Redis answers",
		"op", op, "repair", kind, "id", id, "err", err)
	// The mark must be written even if the request's context ended: the SQL write happened.
	if merr := s.src.MarkRepair(context.WithoutCancel(ctx), kind, id); merr != nil {
		s.log.Error("feed: could not record a repair mark; run `redstate feed rebuild --yes` after Redis returns",
			"repair", kind, "id", id, "err", merr)
	}
}

// Run repairs, every Options.RepairInterval until ctx ends, what the durable repair marks name
// (RepairOnce), and returns nil. With a breaker its ping is the background probe that closes
// it again after an outage.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.opts.RepairInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if n, err := s.RepairOnce(ctx); err != nil {
			s.log.Debug("feed: repair waits for Redis", "repaired", n, "err", err)
		} else if n > 0 {
			s.log.Info("feed: repaired the Redis state after missed writes", "repaired", n)
		}
	}
}

// RepairOnce probes the cache (closing the breaker if Redis answers again) and, if it answers, repairs what every repair mark names and
// removes the mark; it stops at the first failure (the mark stays). It returns how many marks
// it repaired. Errors: EUNAVAILABLE (Redis or SQL).
func (s *Service) RepairOnce(ctx context.Context) (int, error) {
	if err := s.probe(ctx); err != nil {
		return 0, err
	}
	done := 0
	for range maxRepairBatches {
		marks, err := s.src.Repairs(ctx, repairBatch)
		if err != nil {
			return done, err
		}
		progress := false
		for _, r := range marks {
			if err := s.repair(ctx, r); err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) && !redstate.IsCode(err, redstate.EINVALID) {
				return done, err
			}
			if err := s.src.RepairDone(ctx, r); err != nil {
				return done, err
			}
			done++
			progress = true
		}
		if len(marks) < repairBatch || !progress {
			return done, nil
		}
	}
	return done, nil // the rest next round
}

// repair brings the Redis state r names in line with SQL.
func (s *Service) repair(ctx context.Context, r Repair) error {
	switch r.Kind {
	case RepairUser:
		return s.mergeUser(ctx, r.ID)
	case RepairAuthor:
		return s.mergeAuthorIndex(ctx, r.ID)
	case RepairPostCache:
		return s.refreshPosts(ctx, []int64{r.ID})
	case RepairPost:
		posts, err := s.src.Posts(ctx, []int64{r.ID})
		if err != nil {
			return err
		}
		p, ok := posts[r.ID]
		if !ok {
			return nil
		}
		if err := s.ensureAuthorIndex(ctx, p.AuthorID); err != nil {
			return err
		}
		if err := s.cache.AddAuthorPost(ctx, p.AuthorID, PostRef{ID: p.ID, CreateTime: p.CreateTime}); err != nil {
			return err
		}
		if err := s.refreshPosts(ctx, []int64{p.ID}); err != nil {
			return err
		}
		return s.fanOut(ctx, p)
	}
	return ValidRepairKind(r.Kind)
}

// mergeUser merges user's unread state from SQL into Redis (the lazy rebuild, also of a built
// state): entries left from an earlier follow and read posts are removed, missing ones added.
func (s *Service) mergeUser(ctx context.Context, user int64) error {
	st, err := s.stateFromSQL(ctx, user)
	if err != nil {
		return err
	}
	return s.cache.Rebuild(ctx, user, st)
}

// mergeAuthorIndex adds every post of author in SQL to the author's Redis index.
func (s *Service) mergeAuthorIndex(ctx context.Context, author int64) error {
	var after Cursor
	for {
		refs, err := s.src.AuthorPosts(ctx, author, after, pageSize)
		if err != nil {
			return err
		}
		if len(refs) == 0 {
			return nil
		}
		if err := s.cache.SetAuthorIndex(ctx, author, refs); err != nil {
			return err
		}
		last := refs[len(refs)-1]
		after = Cursor{Time: last.CreateTime, ID: last.ID}
	}
}

// fillPosts caches posts read from SQL where they are not cached, then reads them from SQL
// again and deletes the copies that changed meanwhile: a like committed between the first
// read and the cache write (its delete found nothing to delete) cannot leave an old liked
// count cached. A cached counter thus differs from SQL only while a write is in flight.
func (s *Service) fillPosts(ctx context.Context, posts []Post) {
	if len(posts) == 0 {
		return
	}
	ids := make([]int64, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	if err := s.cache.PutPosts(ctx, posts); err != nil {
		// Some copies may have been written before the failure: check them when Redis answers.
		for _, id := range ids {
			s.repairLater(ctx, RepairPostCache, id, "cache posts", err)
		}
		return
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

// RebuildAuthor makes author's Redis index hold every post of the author in SQL and refreshes
// the cached copies of those posts from SQL (`feed rebuild`). Errors: EINVALID, EUNAVAILABLE.
func (s *Service) RebuildAuthor(ctx context.Context, author int64) error {
	if author <= 0 {
		return redstate.Errorf(redstate.EINVALID, "author id must be > 0")
	}
	if err := s.mergeAuthorIndex(ctx, author); err != nil {
		return err
	}
	var after Cursor
	for {
		refs, err := s.src.AuthorPosts(ctx, author, after, pageSize)
		if err != nil || len(refs) == 0 {
			return err
		}
		ids := make([]int64, len(refs))
		for i, r := range refs {
			ids[i] = r.ID
		}
		if err := s.refreshPosts(ctx, ids); err != nil {
			return err
		}
		last := refs[len(refs)-1]
		after = Cursor{Time: last.CreateTime, ID: last.ID}
	}
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
	inSQL, err := collectPages(func(c Cursor, n int) ([]PostRef, error) { return s.src.AuthorPosts(ctx, author, c, n) })
	if err != nil {
		return nil, err
	}
	d := AuthorDrift{Author: author}
	has, err := s.cache.HasAuthorIndex(ctx, author)
	if err != nil {
		return nil, err
	}
	if has {
		inRedis, err := collectPages(func(c Cursor, n int) ([]PostRef, error) { return s.cache.AuthorPage(ctx, author, c, n) })
		if err != nil {
			return nil, err
		}
		d.Missing, d.Extra = diffRefs(inSQL, inRedis)
	}
	for i := 0; i < len(inSQL); i += pageSize {
		chunk := inSQL[i:min(i+pageSize, len(inSQL))]
		ids := make([]int64, len(chunk))
		for j, r := range chunk {
			ids[j] = r.ID
		}
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

// Authors pages the authors that have posts (for rebuild and verify).
func (s *Service) Authors(ctx context.Context, after int64, limit int) ([]int64, error) {
	return s.src.Authors(ctx, after, limit)
}
