package feed

import (
	"context"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/resilience"
)

// Read statuses of Page (the seed's readStatus).
const (
	StatusAll    = "ALL"
	StatusUnread = "UNREAD"
)

// Defaults of Options.
const (
	// DefaultHybridThreshold is the follower count above which an author is not fanned out to
	// (the seed's "big V"): unread is computed on read instead.
	DefaultHybridThreshold = 10000
	// DefaultFanOutBatch is how many followers one fan-out pipeline covers.
	DefaultFanOutBatch = 1000
	// MaxPageSize bounds a page.
	MaxPageSize = 100
)

// Options configure a Service. Zero fields take the defaults stated on them.
type Options struct {
	// HybridThreshold: authors with more followers are hybrid (no fan-out). Default 10,000;
	// negative: every author is hybrid.
	HybridThreshold int64
	// FanOutBatch is the followers per fan-out pipeline. Default 1,000.
	FanOutBatch int
	// Enqueue, if set, schedules the fan-out of a post durably (the queue block; its handler
	// calls FanOutPost). Nil: Publish fans out before returning.
	Enqueue func(ctx context.Context, post int64) error
	// Notifier tells live clients their counts changed. Default: a LocalNotifier.
	Notifier Notifier
	// Logger receives cache failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Breaker, if set, guards every cache call and notification: while it is open they fail at
	// once and reads are answered from SQL; Run's ping probes Redis until it closes.
	Breaker *resilience.Breaker
	// RepairInterval is how often Run repairs what the repair marks name. Default
	// DefaultRepairInterval.
	RepairInterval time.Duration
}

// Service is the feed (seed 003: saveBlog, markBlogAsRead, queryUserBlogByReadStatus, and
// follow, like, unread counts). SQL is the source of truth; every read is answered from Redis
// when it can and from SQL when it cannot. It is safe for concurrent use.
type Service struct {
	src   Source
	cache Cache
	opts  Options
	log   *slog.Logger
}

// NewService returns a Service. Errors: EINVALID (nil source or cache).
func NewService(src Source, cache Cache, opts Options) (*Service, error) {
	if src == nil || cache == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "feed: a source and a cache are required")
	}
	if opts.HybridThreshold == 0 {
		opts.HybridThreshold = DefaultHybridThreshold
	}
	if opts.FanOutBatch <= 0 {
		opts.FanOutBatch = DefaultFanOutBatch
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Notifier == nil {
		opts.Notifier = NewLocalNotifier()
	}
	if opts.RepairInterval <= 0 {
		opts.RepairInterval = DefaultRepairInterval
	}
	if opts.Breaker != nil {
		cache = breakerCache{c: cache, br: opts.Breaker}
		opts.Notifier = breakerNotifier{Notifier: opts.Notifier, br: opts.Breaker}
	}
	return &Service{src: src, cache: cache, opts: opts, log: opts.Logger.With("block", "feed")}, nil
}

// now is the clock at millisecond precision: the precision of Redis scores, so that cursors
// from Redis and from SQL agree.
func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Millisecond) }

// Publish is the seed's saveBlog: the post is stored in SQL (its truth), cached, added to the
// author's index, and fanned out to the followers (durably through Options.Enqueue when set).
// Cache failures do not fail it. Errors: EINVALID, EUNAVAILABLE (SQL).
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
	err = s.ensureAuthorIndex(ctx, post.AuthorID)
	if err == nil {
		err = s.cache.AddAuthorPost(ctx, post.AuthorID, PostRef{ID: post.ID, CreateTime: post.CreateTime})
	}
	if err != nil {
		s.repairLater(ctx, RepairPost, post.ID, "author index", err) // its repair also caches the post
	} else {
		s.fillPosts(ctx, []Post{post})
	}
	if s.opts.Enqueue != nil {
		if err := s.opts.Enqueue(ctx, post.ID); err == nil {
			return post, nil
		} else {
			s.log.Warn("feed: fan-out could not be enqueued; fanning out now", "post", post.ID, "err", err)
		}
	}
	_ = s.fanOut(ctx, post) // a failure is marked for repair
	return post, nil
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

// fanOut is FanOutPost of a post read from SQL; a Redis failure is also marked for repair (so
// a fan-out job dead-lettered during an outage is still done when Redis returns).
func (s *Service) fanOut(ctx context.Context, post Post) error {
	hybrid, err := s.hybrid(ctx, post.AuthorID)
	if err != nil || hybrid {
		return err
	}
	ref := PostRef{ID: post.ID, CreateTime: post.CreateTime}
	after := int64(0)
	for {
		page, err := s.src.Followers(ctx, post.AuthorID, after, s.opts.FanOutBatch)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		followers := make([]int64, 0, len(page))
		for _, f := range page {
			if !f.Since.After(post.CreateTime) { // followed when the post was published
				followers = append(followers, f.Follower)
			}
		}
		if _, err := s.cache.FanOut(ctx, post.AuthorID, ref, followers); err != nil {
			s.repairLater(ctx, RepairPost, post.ID, "fan-out", err)
			return err
		}
		s.notify(ctx, followers...)
		after = page[len(page)-1].Follower
	}
}

// hybrid reports whether author has more followers than the threshold.
func (s *Service) hybrid(ctx context.Context, author int64) (bool, error) {
	n, err := s.src.FollowerCount(ctx, author)
	return n > s.opts.HybridThreshold, err
}

// ensureAuthorIndex builds author's index from SQL when Redis has none; a build cut short by
// Redis is marked for repair (the partial index exists, so it would not be built again).
func (s *Service) ensureAuthorIndex(ctx context.Context, author int64) error {
	ok, err := s.cache.HasAuthorIndex(ctx, author)
	if err != nil || ok {
		return err
	}
	if err := s.mergeAuthorIndex(ctx, author); err != nil {
		if redstate.IsCode(err, redstate.EUNAVAILABLE) {
			s.repairLater(ctx, RepairAuthor, author, "build author index", err)
		}
		return err
	}
	return nil
}

// ensureBuilt rebuilds user's Redis unread state from SQL when it is not built.
func (s *Service) ensureBuilt(ctx context.Context, user int64) error {
	built, err := s.cache.Built(ctx, user)
	if err != nil || built {
		return err
	}
	st, err := s.stateFromSQL(ctx, user)
	if err != nil {
		return err
	}
	return s.cache.Rebuild(ctx, user, st)
}

// stateFromSQL reads user's unread state from SQL: per followed fan-out author the unread
// posts, and the read marks of hybrid authors' posts since the follow.
func (s *Service) stateFromSQL(ctx context.Context, user int64) (UserState, error) {
	follows, err := s.src.Following(ctx, user)
	if err != nil {
		return UserState{}, err
	}
	st := UserState{Unread: map[int64][]PostRef{}, Since: map[int64]time.Time{}}
	for _, f := range follows {
		hybrid, err := s.hybrid(ctx, f.Author)
		if err != nil {
			return UserState{}, err
		}
		refs, err := s.allSince(ctx, f.Author, f.Since)
		if err != nil {
			return UserState{}, err
		}
		read, err := s.readOf(ctx, user, refs)
		if err != nil {
			return UserState{}, err
		}
		// Every read mark goes to the read set, also of fan-out authors: the merge removes a
		// post read while Redis was unreachable from the unread set.
		st.Read = append(st.Read, read...)
		if hybrid {
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
	counts, err := s.redisCounts(ctx, user)
	if err != nil {
		return nil, err
	}
	follows, err := s.src.Following(ctx, user)
	if err != nil {
		return nil, err
	}
	var drifts []Drift
	for _, f := range follows {
		truth, err := s.src.UnreadCount(ctx, user, f.Author)
		if err != nil {
			return nil, err
		}
		hybrid, err := s.hybrid(ctx, f.Author)
		if err != nil {
			return nil, err
		}
		var listed int64
		same := true
		if hybrid {
			listed = counts[f.Author]
		} else {
			inRedis, err := s.allRedisUnread(ctx, user, f.Author)
			if err != nil {
				return nil, err
			}
			inSQL, err := s.allUnread(ctx, user, f.Author)
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

// allRedisUnread lists user's whole unread set of author in Redis.
func (s *Service) allRedisUnread(ctx context.Context, user, author int64) ([]PostRef, error) {
	return collectPages(func(c Cursor, n int) ([]PostRef, error) { return s.cache.UnreadPage(ctx, user, author, c, n) })
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

// Users pages the users that follow someone (for rebuild and verify).
func (s *Service) Users(ctx context.Context, after int64, limit int) ([]int64, error) {
	return s.src.Users(ctx, after, limit)
}

// allSince lists every post of author created at or after since, from SQL.
func (s *Service) allSince(ctx context.Context, author int64, since time.Time) ([]PostRef, error) {
	var out []PostRef
	var after Cursor
	for {
		refs, err := s.src.AuthorPosts(ctx, author, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			if r.CreateTime.Before(since) {
				return out, nil
			}
			out = append(out, r)
		}
		if len(refs) < 1000 {
			return out, nil
		}
		last := refs[len(refs)-1]
		after = Cursor{Time: last.CreateTime, ID: last.ID}
	}
}

// allUnread lists every unread post of author for user, from SQL.
func (s *Service) allUnread(ctx context.Context, user, author int64) ([]PostRef, error) {
	return collectPages(func(c Cursor, n int) ([]PostRef, error) { return s.src.UnreadPosts(ctx, user, author, c, n) })
}

// readOf returns the ids among refs user has read, from SQL (in chunks of 1000).
func (s *Service) readOf(ctx context.Context, user int64, refs []PostRef) ([]int64, error) {
	var out []int64
	for i := 0; i < len(refs); i += 1000 {
		chunk := refs[i:min(i+1000, len(refs))]
		ids := make([]int64, len(chunk))
		for j, r := range chunk {
			ids[j] = r.ID
		}
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

// MarkRead is the seed's markBlogAsRead for viewer: the read mark goes to SQL, then the Redis
// script updates read set, unread set and count together (idempotent, never negative).
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
		return 0, err
	}
	n := int64(len(marked))
	if _, err := s.cache.MarkAuthorRead(ctx, viewer, author, marked); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "mark author read", err)
	}
	s.notify(ctx, viewer)
	return n, nil
}

// Follow makes viewer follow author from now on. Errors: EINVALID, EUNAVAILABLE.
func (s *Service) Follow(ctx context.Context, viewer, author int64) (bool, error) {
	if viewer <= 0 || author <= 0 {
		return false, redstate.Errorf(redstate.EINVALID, "viewer and author ids must be > 0")
	}
	created, err := s.src.Follow(ctx, viewer, author, s.now())
	if err != nil || !created {
		return created, err
	}
	// A new follow starts with no unread posts: clear any state left from an earlier follow.
	if err := s.cache.Unfollow(ctx, viewer, author); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "follow", err)
	}
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
		return false, err
	}
	if err := s.cache.Unfollow(ctx, viewer, author); err != nil {
		s.repairLater(ctx, RepairUser, viewer, "unfollow", err)
	}
	s.notify(ctx, viewer)
	return removed, nil
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
		return changed, err
	}
	if err := s.cache.DeletePosts(ctx, []int64{postID}); err != nil {
		s.repairLater(ctx, RepairPostCache, postID, "like", err)
	}
	return true, nil
}

// PostView is a post as a viewer sees it in a page.
type PostView struct {
	Post
	// IsLiked says whether the viewer likes the post (seed 3.2).
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
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
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
		last := refs[len(refs)-1]
		page.Next = Cursor{Time: last.CreateTime, ID: last.ID}
	}
	return page, nil
}

// allPage lists author's posts: the Redis index, continued from SQL when short.
func (s *Service) allPage(ctx context.Context, author int64, after Cursor, limit int) ([]PostRef, error) {
	if err := s.ensureAuthorIndex(ctx, author); err == nil {
		if refs, err := s.cache.AuthorPage(ctx, author, after, limit); err == nil {
			return s.continueFromSQL(ctx, refs, after, limit, func(c Cursor, n int) ([]PostRef, error) {
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
	return s.continueFromSQL(ctx, refs, after, limit, fromSQL)
}

// continueFromSQL completes a short Redis page from SQL (posts past the Redis window).
func (s *Service) continueFromSQL(_ context.Context, refs []PostRef, after Cursor, limit int, sql func(Cursor, int) ([]PostRef, error)) ([]PostRef, error) {
	if len(refs) >= limit {
		return refs, nil
	}
	c := after
	if len(refs) > 0 {
		last := refs[len(refs)-1]
		c = Cursor{Time: last.CreateTime, ID: last.ID}
	}
	more, err := sql(c, limit-len(refs))
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

// UnreadCounts returns viewer's unread count per followed author (zero counts absent) and the
// total: fan-out authors from the Redis counts hash, hybrid authors computed; all from SQL when
// Redis fails. Errors: EINVALID, EUNAVAILABLE (SQL).
func (s *Service) UnreadCounts(ctx context.Context, viewer int64) (map[int64]int64, int64, error) {
	if viewer <= 0 {
		return nil, 0, redstate.Errorf(redstate.EINVALID, "viewer id must be > 0")
	}
	counts, err := s.redisCounts(ctx, viewer)
	if err != nil {
		s.degraded("feed: Redis unavailable for unread counts; answering from SQL", err)
		if counts, err = s.sqlCounts(ctx, viewer); err != nil {
			return nil, 0, err
		}
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	return counts, total, nil
}

func (s *Service) redisCounts(ctx context.Context, viewer int64) (map[int64]int64, error) {
	if err := s.ensureBuilt(ctx, viewer); err != nil {
		return nil, err
	}
	counts, err := s.cache.UnreadCounts(ctx, viewer)
	if err != nil {
		return nil, err
	}
	follows, err := s.src.Following(ctx, viewer)
	if err != nil {
		return nil, err
	}
	for _, f := range follows {
		hybrid, err := s.hybrid(ctx, f.Author)
		if err != nil {
			return nil, err
		}
		if !hybrid {
			continue
		}
		if err := s.ensureAuthorIndex(ctx, f.Author); err != nil {
			return nil, err
		}
		n, _, err := s.cache.HybridUnread(ctx, viewer, f.Author, f.Since, Cursor{}, 0)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			counts[f.Author] = n
		} else {
			delete(counts, f.Author)
		}
	}
	return counts, nil
}

func (s *Service) sqlCounts(ctx context.Context, viewer int64) (map[int64]int64, error) {
	follows, err := s.src.Following(ctx, viewer)
	if err != nil {
		return nil, err
	}
	counts := map[int64]int64{}
	for _, f := range follows {
		n, err := s.src.UnreadCount(ctx, viewer, f.Author)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			counts[f.Author] = n
		}
	}
	return counts, nil
}

// pageSize is the page size of collectPages.
const pageSize = 1000

// collectPages reads every page fetch returns, newest first, and returns them concatenated.
func collectPages(fetch func(after Cursor, limit int) ([]PostRef, error)) ([]PostRef, error) {
	var out []PostRef
	var after Cursor
	for {
		refs, err := fetch(after, pageSize)
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
		if len(refs) < pageSize {
			return out, nil
		}
		last := refs[len(refs)-1]
		after = Cursor{Time: last.CreateTime, ID: last.ID}
	}
}

// notify tells users' live clients that their counts changed; a failure only delays them to
// their next heartbeat re-read.
func (s *Service) notify(ctx context.Context, users ...int64) {
	if err := s.opts.Notifier.Notify(ctx, users); err != nil {
		s.log.Debug("feed: notification failed", "err", err)
	}
}

// Subscribe returns a channel signalled when viewer's unread counts may have changed, and the
// function that ends the subscription.
func (s *Service) Subscribe(viewer int64) (<-chan struct{}, func()) {
	return s.opts.Notifier.Subscribe(viewer)
}
