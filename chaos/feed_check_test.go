//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redstate/redstate/feed"
)

// settle waits for the fan-out queue to empty and for the repair loop's work (the product's
// own repair: every repair mark done), so that what is left is what a failover lost without
// a trace.
func (l *feedLoad) settle(t *testing.T) {
	l.f.drain(t)
	l.f.repairMarks(t)
}

// rows checks the phase's acknowledged publishes and mark-reads before and after the
// documented repair after a failover (`redstate feed rebuild --yes`: RebuildUser of every
// user, RebuildAuthor of every author; docs/resilience.md, "Feed after a failover").
// Columns of "feed publish" and "feed mark-read":
//   - stale: acknowledged writes whose effect is missing after the product's own repair
//     (fan-out drained, repair marks done), before the rebuild: a post absent from SQL, its
//     author's index or a follower's state (neither unread nor read); a read mark absent from
//     SQL or the read set, or the post still in the unread set;
//   - lost: the same after the rebuild;
//   - diffs: `feed verify` differences after the rebuild (authors whose index or post cache
//     differs from SQL for publish; (user, author) pairs whose unread count or set differs
//     for mark-read): must be 0.
//
// "feed read" counts the unread-count and UNREAD-page reads; a failed one is a read the feed
// did not answer (it answers from SQL while Redis fails).
func (l *feedLoad) rows(t *testing.T, faultAt time.Time) []row {
	pub, mark, read := newRow("feed publish"), newRow("feed mark-read"), newRow("feed read")
	pub.acked, pub.failed = l.pubLog.counts()
	mark.acked, mark.failed = l.markLog.counts()
	read.acked, read.failed = l.readLog.counts()
	pub.stale, mark.stale = l.missing(t)
	users, authors := l.f.verify(t)
	t.Logf("feed %s: before the rebuild `feed verify` finds %d drifted (user, author) pairs %+v and %d drifted authors",
		l.f.mode, len(users), users, len(authors))
	l.f.rebuild(t)
	users, authors = l.f.verify(t)
	pub.diffs, mark.diffs = len(authors), len(users)
	if len(users)+len(authors) > 0 {
		t.Errorf("feed %s: Redis still differs from SQL after `feed rebuild`: users %+v, authors %s",
			l.f.mode, users, fmtAuthorDrifts(authors))
	}
	pub.lost, mark.lost = l.missing(t)
	pub.recovery = recovered(t, &l.pubLog, faultAt, pub.block)
	mark.recovery = recovered(t, &l.markLog, faultAt, mark.block)
	read.recovery = recovered(t, &l.readLog, faultAt, read.block)
	return []row{pub, mark, read}
}

// fmtAuthorDrifts prints author drifts for a failure message.
func fmtAuthorDrifts(ds []*feed.AuthorDrift) string {
	s := ""
	for _, d := range ds {
		s += fmt.Sprintf("%+v ", *d)
	}
	return s
}

// drain waits until the fan-out queue has no pending or running job, or feedDrain passed
// (jobs left then are still covered by their repair marks and the rebuild).
func (f *feedRun) drain(t *testing.T) {
	deadline := time.Now().Add(feedDrain)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st, err := f.broker.Stats(ctx, f.queue)
		cancel()
		if err == nil && st.Pending+st.Running == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("feed %s: fan-out queue not drained after %v: %+v, %v", f.mode, feedDrain, st, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// repairMarks runs RepairOnce (as the repair loop does) until no repair mark is left.
func (f *feedRun) repairMarks(t *testing.T) {
	feedRetry(t, "repair marks", func(ctx context.Context) (struct{}, error) {
		if _, err := f.svc.RepairOnce(ctx); err != nil {
			return struct{}{}, err
		}
		marks, err := f.src.Repairs(ctx, 1)
		if err == nil && len(marks) > 0 {
			err = fmt.Errorf("repair marks left: %+v", marks)
		}
		return struct{}{}, err
	})
}

// verify runs `feed verify`: VerifyUser of every user who follows someone and VerifyAuthor of
// every author with posts.
func (f *feedRun) verify(t *testing.T) ([]feed.Drift, []*feed.AuthorDrift) {
	type drifts struct {
		users   []feed.Drift
		authors []*feed.AuthorDrift
	}
	d := feedRetry(t, "feed verify", func(ctx context.Context) (drifts, error) {
		var d drifts
		err := f.svc.EachUser(ctx, func(u int64) error {
			ds, err := f.svc.VerifyUser(ctx, u)
			d.users = append(d.users, ds...)
			return err
		})
		if err != nil {
			return d, err
		}
		err = f.svc.EachAuthor(ctx, func(a int64) error {
			ad, err := f.svc.VerifyAuthor(ctx, a)
			if ad != nil {
				d.authors = append(d.authors, ad)
			}
			return err
		})
		return d, err
	})
	return d.users, d.authors
}

// rebuild runs `feed rebuild --yes`: RebuildUser of every user who follows someone and
// RebuildAuthor of every author with posts.
func (f *feedRun) rebuild(t *testing.T) {
	feedRetry(t, "feed rebuild", func(ctx context.Context) (struct{}, error) {
		if err := f.svc.EachUser(ctx, func(u int64) error { return f.svc.RebuildUser(ctx, u) }); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, f.svc.EachAuthor(ctx, func(a int64) error { return f.svc.RebuildAuthor(ctx, a) })
	})
}

// missing returns how many of the phase's acknowledged publishes and mark-reads have an effect
// missing in SQL or Redis (see rows).
func (l *feedLoad) missing(t *testing.T) (posts, marks int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.f.snapshot(t, l.posts)
	for _, p := range l.posts {
		ok := s.inSQL[p.ID] && s.index[p.AuthorID][p.ID]
		for _, u := range l.f.followers {
			ok = ok && (s.unread[[2]int64{u, p.AuthorID}][p.ID] || s.read[u][p.ID])
		}
		if !ok {
			posts++
		}
	}
	author := make(map[int64]int64, len(l.posts))
	for _, p := range l.posts {
		author[p.ID] = p.AuthorID
	}
	for m := range l.marks {
		if !s.readSQL[m.user][m.post] || !s.read[m.user][m.post] || s.unread[[2]int64{m.user, author[m.post]}][m.post] {
			marks++
		}
	}
	return posts, marks
}

// feedSnapshot is what SQL and Redis hold of a phase's posts.
type feedSnapshot struct {
	// inSQL are the posts SQL has; readSQL[user] the posts SQL has user's read mark of.
	inSQL   map[int64]bool
	readSQL map[int64]map[int64]bool
	// index[author] is the author's Redis index, unread[{user, author}] the user's Redis unread
	// set of the author, read[user] which of the posts Redis holds read for the user (ReadOf).
	index  map[int64]map[int64]bool
	unread map[[2]int64]map[int64]bool
	read   map[int64]map[int64]bool
}

// snapshot reads what SQL and Redis hold of posts (Redis directly, without the breaker).
func (f *feedRun) snapshot(t *testing.T, posts []feed.Post) feedSnapshot {
	return feedRetry(t, "feed snapshot", func(ctx context.Context) (feedSnapshot, error) {
		s := feedSnapshot{inSQL: map[int64]bool{}, readSQL: map[int64]map[int64]bool{}, index: map[int64]map[int64]bool{},
			unread: map[[2]int64]map[int64]bool{}, read: map[int64]map[int64]bool{}}
		var err error
		for i := 0; i < len(posts); i += 500 {
			ids := make([]int64, 0, 500)
			byAuthor := map[int64][]int64{}
			for _, p := range posts[i:min(i+500, len(posts))] {
				ids = append(ids, p.ID)
				byAuthor[p.AuthorID] = append(byAuthor[p.AuthorID], p.ID)
			}
			found, err := f.src.Posts(ctx, ids)
			if err != nil {
				return s, err
			}
			for id := range found {
				s.inSQL[id] = true
			}
			for _, u := range f.followers {
				if err := mergeBools(&s.readSQL, u, func() (map[int64]bool, error) { return f.src.ReadOf(ctx, u, ids) }); err != nil {
					return s, err
				}
				for a, aids := range byAuthor {
					if err := mergeBools(&s.read, u, func() (map[int64]bool, error) { return f.cache.ReadOf(ctx, u, a, aids) }); err != nil {
						return s, err
					}
				}
			}
		}
		for _, a := range f.authors {
			if s.index[a], err = allRefs(func(c feed.Cursor, n int) ([]feed.PostRef, error) { return f.cache.AuthorPage(ctx, a, c, n) }); err != nil {
				return s, err
			}
			for _, u := range f.followers {
				k := [2]int64{u, a}
				if s.unread[k], err = allRefs(func(c feed.Cursor, n int) ([]feed.PostRef, error) { return f.cache.UnreadPage(ctx, u, a, c, n) }); err != nil {
					return s, err
				}
			}
		}
		return s, nil
	})
}

// mergeBools adds the true entries of get's answer to (*m)[key].
func mergeBools(m *map[int64]map[int64]bool, key int64, get func() (map[int64]bool, error)) error {
	got, err := get()
	if err != nil {
		return err
	}
	if (*m)[key] == nil {
		(*m)[key] = map[int64]bool{}
	}
	for id, ok := range got {
		if ok {
			(*m)[key][id] = true
		}
	}
	return nil
}

// allRefs returns the ids of every ref page lists, newest first, 100 per page.
func allRefs(page func(feed.Cursor, int) ([]feed.PostRef, error)) (map[int64]bool, error) {
	ids := map[int64]bool{}
	var c feed.Cursor
	for {
		refs, err := page(c, 100)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			ids[r.ID] = true
		}
		if len(refs) < 100 {
			return ids, nil
		}
		last := refs[len(refs)-1]
		c = feed.Cursor{Time: last.CreateTime, ID: last.ID}
	}
}

// feedRetry runs fn until it succeeds, retrying for failoverTimeout (the topology may still be
// settling), and returns its result; the test fails after that.
func feedRetry[T any](t *testing.T, what string, fn func(ctx context.Context) (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(failoverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		v, err := fn(ctx)
		cancel()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, failoverTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
