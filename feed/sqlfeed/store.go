// Package sqlfeed is the SQL feed.Source (SQLite embedded, PostgreSQL or MySQL/MariaDB in
// production): the seed's blog table plus follows, read marks and likes. Pages are keyset
// pages on (create_time, id); unread is one NOT EXISTS query; likes change the like row and
// the post's count in one transaction. MySQL has neither RETURNING nor ON CONFLICT: there an
// insert that may meet an existing row is INSERT … ON DUPLICATE KEY UPDATE (a no-op update
// for "do nothing", whose affected-row count is 0), and ids come from LastInsertId.
package sqlfeed

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/sqldb"
)

// maxIDs bounds the ids of one batch call; maxLimit a page.
const (
	maxIDs   = 1000
	maxLimit = 1000
)

// Store is the SQL feed.Source. It is safe for concurrent use.
type Store struct {
	db *sqldb.DB
}

var _ feed.Source = (*Store)(nil)

// New migrates the feed schema on db and returns a Store. Errors: those of sqldb.Migrate.
func New(ctx context.Context, db *sqldb.DB) (*Store, error) {
	if err := sqldb.Migrate(ctx, db, Component, Migrations); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

func us(t time.Time) int64     { return t.UnixMicro() }
func fromUS(v int64) time.Time { return time.UnixMicro(v).UTC() }

// doNothing ends an INSERT whose conflict with an existing row (on the primary key whose first
// column is col) leaves that row alone and affects no row: ON CONFLICT DO NOTHING, or on MySQL
// a no-op ON DUPLICATE KEY UPDATE.
func (s *Store) doNothing(table, col string) string {
	if s.db.Dialect == sqldb.MySQL {
		return " ON DUPLICATE KEY UPDATE " + table + "." + col + " = " + table + "." + col
	}
	return " ON CONFLICT DO NOTHING"
}

func positive(what string, ids ...int64) error {
	for _, id := range ids {
		if id <= 0 {
			return redstate.Errorf(redstate.EINVALID, "%s must be > 0, got %d", what, id)
		}
	}
	return nil
}

func checkLimit(limit int) error {
	if limit < 1 || limit > maxLimit {
		return redstate.Errorf(redstate.EINVALID, "limit must be 1..%d, got %d", maxLimit, limit)
	}
	return nil
}

// CreatePost implements feed.Source.
func (s *Store) CreatePost(ctx context.Context, p feed.Post) (feed.Post, error) {
	if err := positive("userId", p.AuthorID); err != nil {
		return feed.Post{}, err
	}
	if p.Title == "" {
		return feed.Post{}, redstate.Errorf(redstate.EINVALID, "title is required")
	}
	if p.ID < 0 {
		return feed.Post{}, redstate.Errorf(redstate.EINVALID, "id must be >= 0, got %d", p.ID)
	}
	now := time.Now().UTC()
	if p.CreateTime.IsZero() {
		p.CreateTime = now
	}
	if p.UpdateTime.IsZero() {
		p.UpdateTime = p.CreateTime
	}
	p.CreateTime, p.UpdateTime = fromUS(us(p.CreateTime)), fromUS(us(p.UpdateTime))
	if p.Images == nil {
		p.Images = []string{}
	}
	images, _ := json.Marshal(p.Images)
	cols, args := "user_id, title, content, images, liked, create_time, update_time", []any{p.AuthorID, p.Title, p.Content, string(images), p.Liked, us(p.CreateTime), us(p.UpdateTime)}
	if p.ID > 0 {
		cols, args = "id, "+cols, append([]any{p.ID}, args...)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")
	insert := "INSERT INTO blog (" + cols + ") VALUES (" + marks + ")"
	if s.db.Dialect == sqldb.MySQL {
		res, err := s.db.ExecContext(ctx, insert, args...)
		if err != nil {
			return feed.Post{}, sqldb.Map(err, "create post")
		}
		p.ID, err = res.LastInsertId()
		return p, sqldb.Map(err, "create post")
	}
	err := s.db.QueryRowContext(ctx, s.db.Rebind(insert+" RETURNING id"), args...).Scan(&p.ID)
	if err != nil {
		return feed.Post{}, sqldb.Map(err, "create post")
	}
	return p, nil
}

// inList returns "?, ?, …" for n values and the values as args.
func inList(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "), args
}

func checkIDs(ids []int64) error {
	if len(ids) > maxIDs {
		return redstate.Errorf(redstate.EINVALID, "at most %d ids, got %d", maxIDs, len(ids))
	}
	return nil
}

// Posts implements feed.Source.
func (s *Store) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	out := map[int64]feed.Post{}
	if len(ids) == 0 {
		return out, nil
	}
	if err := checkIDs(ids); err != nil {
		return nil, err
	}
	marks, args := inList(ids)
	rows, err := s.db.QueryContext(ctx, s.db.Rebind("SELECT id, user_id, title, content, images, liked, create_time, update_time FROM blog WHERE id IN ("+marks+")"), args...)
	if err != nil {
		return nil, sqldb.Map(err, "read posts")
	}
	defer rows.Close()
	for rows.Next() {
		var p feed.Post
		var images string
		var ct, ut int64
		if err := rows.Scan(&p.ID, &p.AuthorID, &p.Title, &p.Content, &images, &p.Liked, &ct, &ut); err != nil {
			return nil, sqldb.Map(err, "read posts")
		}
		_ = json.Unmarshal([]byte(images), &p.Images)
		p.CreateTime, p.UpdateTime = fromUS(ct), fromUS(ut)
		out[p.ID] = p
	}
	return out, sqldb.Map(rows.Err(), "read posts")
}

// refs runs a query returning (id, create_time) rows.
func (s *Store) refs(ctx context.Context, op, query string, args ...any) ([]feed.PostRef, error) {
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(query), args...)
	if err != nil {
		return nil, sqldb.Map(err, op)
	}
	defer rows.Close()
	out := []feed.PostRef{}
	for rows.Next() {
		var r feed.PostRef
		var ct int64
		if err := rows.Scan(&r.ID, &ct); err != nil {
			return nil, sqldb.Map(err, op)
		}
		r.CreateTime = fromUS(ct)
		out = append(out, r)
	}
	return out, sqldb.Map(rows.Err(), op)
}

// afterClause is the keyset condition "strictly after cursor, newest first".
func afterClause(c feed.Cursor) (string, []any) {
	if c.IsZero() {
		return "", nil
	}
	return " AND (b.create_time < ? OR (b.create_time = ? AND b.id < ?))", []any{us(c.Time), us(c.Time), c.ID}
}

// AuthorPosts implements feed.Source.
func (s *Store) AuthorPosts(ctx context.Context, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	if err := positive("author", author); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	cond, cargs := afterClause(after)
	args := append([]any{author}, cargs...)
	return s.refs(ctx, "author posts", "SELECT b.id, b.create_time FROM blog b WHERE b.user_id = ?"+cond+
		" ORDER BY b.create_time DESC, b.id DESC LIMIT "+strconv.Itoa(limit), args...)
}

// unreadFrom is the FROM/WHERE of a viewer's unread posts of an author.
const unreadFrom = ` FROM blog b JOIN follow f ON f.author_id = b.user_id AND f.follower_id = ?
	WHERE b.user_id = ? AND b.create_time >= f.since
	AND NOT EXISTS (SELECT 1 FROM blog_read r WHERE r.user_id = f.follower_id AND r.blog_id = b.id)`

// UnreadPosts implements feed.Source.
func (s *Store) UnreadPosts(ctx context.Context, viewer, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	if err := positive("viewer and author", viewer, author); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	cond, cargs := afterClause(after)
	args := append([]any{viewer, author}, cargs...)
	return s.refs(ctx, "unread posts", "SELECT b.id, b.create_time"+unreadFrom+cond+
		" ORDER BY b.create_time DESC, b.id DESC LIMIT "+strconv.Itoa(limit), args...)
}

// UnreadCount implements feed.Source.
func (s *Store) UnreadCount(ctx context.Context, viewer, author int64) (int64, error) {
	if err := positive("viewer and author", viewer, author); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.QueryRowContext(ctx, s.db.Rebind("SELECT COUNT(*)"+unreadFrom), viewer, author).Scan(&n)
	return n, sqldb.Map(err, "unread count")
}

// UnreadCounts implements feed.Source.
func (s *Store) UnreadCounts(ctx context.Context, viewer int64) (map[int64]int64, error) {
	if err := positive("viewer", viewer); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(`SELECT b.user_id, COUNT(*)
		FROM follow f JOIN blog b ON b.user_id = f.author_id AND b.create_time >= f.since
		WHERE f.follower_id = ?
		AND NOT EXISTS (SELECT 1 FROM blog_read r WHERE r.user_id = f.follower_id AND r.blog_id = b.id)
		GROUP BY b.user_id`), viewer)
	if err != nil {
		return nil, sqldb.Map(err, "unread counts")
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var author, n int64
		if err := rows.Scan(&author, &n); err != nil {
			return nil, sqldb.Map(err, "unread counts")
		}
		out[author] = n
	}
	return out, sqldb.Map(rows.Err(), "unread counts")
}

// Follow implements feed.Source.
func (s *Store) Follow(ctx context.Context, follower, author int64, since time.Time) (bool, error) {
	if err := positive("follower and author", follower, author); err != nil {
		return false, err
	}
	if follower == author {
		return false, redstate.Errorf(redstate.EINVALID, "a user cannot follow themselves")
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind("INSERT INTO follow (follower_id, author_id, since) VALUES (?, ?, ?)"+s.doNothing("follow", "follower_id")),
		follower, author, us(since))
	if err != nil {
		return false, sqldb.Map(err, "follow")
	}
	n, err := res.RowsAffected()
	return n == 1, sqldb.Map(err, "follow")
}

// Unfollow implements feed.Source.
func (s *Store) Unfollow(ctx context.Context, follower, author int64) (bool, error) {
	if err := positive("follower and author", follower, author); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind("DELETE FROM follow WHERE follower_id = ? AND author_id = ?"), follower, author)
	if err != nil {
		return false, sqldb.Map(err, "unfollow")
	}
	n, err := res.RowsAffected()
	return n == 1, sqldb.Map(err, "unfollow")
}

// FollowOf implements feed.Source.
func (s *Store) FollowOf(ctx context.Context, follower, author int64) (feed.Follow, error) {
	if err := positive("follower and author", follower, author); err != nil {
		return feed.Follow{}, err
	}
	var since int64
	err := s.db.QueryRowContext(ctx, s.db.Rebind("SELECT since FROM follow WHERE follower_id = ? AND author_id = ?"), follower, author).Scan(&since)
	if err != nil {
		return feed.Follow{}, sqldb.Map(err, "follow of")
	}
	return feed.Follow{Follower: follower, Author: author, Since: fromUS(since)}, nil
}

// follows runs a query returning (follower, author, since) rows.
func (s *Store) follows(ctx context.Context, op, query string, args ...any) ([]feed.Follow, error) {
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(query), args...)
	if err != nil {
		return nil, sqldb.Map(err, op)
	}
	defer rows.Close()
	out := []feed.Follow{}
	for rows.Next() {
		var f feed.Follow
		var since int64
		if err := rows.Scan(&f.Follower, &f.Author, &since); err != nil {
			return nil, sqldb.Map(err, op)
		}
		f.Since = fromUS(since)
		out = append(out, f)
	}
	return out, sqldb.Map(rows.Err(), op)
}

// Followers implements feed.Source.
func (s *Store) Followers(ctx context.Context, author, after int64, limit int) ([]feed.Follow, error) {
	if err := positive("author", author); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	return s.follows(ctx, "followers", "SELECT follower_id, author_id, since FROM follow WHERE author_id = ? AND follower_id > ? ORDER BY follower_id LIMIT "+strconv.Itoa(limit), author, after)
}

// FollowerCount implements feed.Source.
func (s *Store) FollowerCount(ctx context.Context, author int64) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, s.db.Rebind("SELECT COUNT(*) FROM follow WHERE author_id = ?"), author).Scan(&n)
	return n, sqldb.Map(err, "follower count")
}

// Users implements feed.Source.
func (s *Store) Users(ctx context.Context, after int64, limit int) ([]int64, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.db.Rebind("SELECT DISTINCT follower_id FROM follow WHERE follower_id > ? ORDER BY follower_id LIMIT "+strconv.Itoa(limit)), after)
	if err != nil {
		return nil, sqldb.Map(err, "users")
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, sqldb.Map(err, "users")
		}
		out = append(out, id)
	}
	return out, sqldb.Map(rows.Err(), "users")
}

// Following implements feed.Source.
func (s *Store) Following(ctx context.Context, user int64) ([]feed.Follow, error) {
	if err := positive("user", user); err != nil {
		return nil, err
	}
	return s.follows(ctx, "following", "SELECT follower_id, author_id, since FROM follow WHERE follower_id = ? ORDER BY author_id", user)
}

// FollowingCounts implements feed.Source: one query, each author's followers counted by a
// correlated subquery on the follow_author index, stopped after upTo rows, and its posts
// probed on the blog_author_time index.
func (s *Store) FollowingCounts(ctx context.Context, user, upTo int64) ([]feed.FollowCount, error) {
	if err := positive("user", user); err != nil {
		return nil, err
	}
	count, args := "SELECT COUNT(*) FROM follow c WHERE c.author_id = f.author_id", []any{user}
	switch {
	case upTo > 0 && s.db.Dialect == sqldb.MySQL:
		// MariaDB refuses an outer reference inside a derived table: the count is upTo when an
		// upTo-th follower exists (one index probe of upTo entries), else the full count.
		n := strconv.FormatInt(upTo, 10)
		count = "SELECT CASE WHEN (SELECT c.follower_id FROM follow c WHERE c.author_id = f.author_id ORDER BY c.follower_id LIMIT 1 OFFSET " +
			strconv.FormatInt(upTo-1, 10) + ") IS NOT NULL THEN " + n + " ELSE (" + count + ") END"
	case upTo > 0:
		count, args = "SELECT COUNT(*) FROM (SELECT 1 FROM follow c WHERE c.author_id = f.author_id LIMIT ?) x", []any{upTo, user}
	}
	rows, err := s.db.QueryContext(ctx, s.db.Rebind("SELECT f.follower_id, f.author_id, f.since, ("+count+
		"), CASE WHEN EXISTS (SELECT 1 FROM blog b WHERE b.user_id = f.author_id) THEN 1 ELSE 0 END"+
		" FROM follow f WHERE f.follower_id = ? ORDER BY f.author_id"), args...)
	if err != nil {
		return nil, sqldb.Map(err, "following counts")
	}
	defer rows.Close()
	out := []feed.FollowCount{}
	for rows.Next() {
		var f feed.FollowCount
		var since, posts int64
		if err := rows.Scan(&f.Follower, &f.Author, &since, &f.Followers, &posts); err != nil {
			return nil, sqldb.Map(err, "following counts")
		}
		f.Since, f.HasPosts = fromUS(since), posts == 1
		out = append(out, f)
	}
	return out, sqldb.Map(rows.Err(), "following counts")
}

// MarkRead implements feed.Source.
func (s *Store) MarkRead(ctx context.Context, user, post int64, at time.Time) (bool, error) {
	if err := positive("user and post", user, post); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO blog_read (user_id, blog_id, read_at)
		SELECT ?, id, ? FROM blog WHERE id = ?`+s.doNothing("blog_read", "user_id")), user, us(at), post)
	if err != nil {
		return false, sqldb.Map(err, "mark read")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, sqldb.Map(err, "mark read")
	}
	if n == 0 {
		if ps, err := s.Posts(ctx, []int64{post}); err != nil {
			return false, err
		} else if len(ps) == 0 {
			return false, redstate.Errorf(redstate.ENOTFOUND, "post %d not found", post)
		}
	}
	return n == 1, nil
}

// MarkAuthorRead implements feed.Source.
func (s *Store) MarkAuthorRead(ctx context.Context, user, author int64, upTo, at time.Time) ([]int64, error) {
	if err := positive("user and author", user, author); err != nil {
		return nil, err
	}
	if s.db.Dialect == sqldb.MySQL {
		return s.markAuthorReadMySQL(ctx, user, author, upTo, at)
	}
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(`INSERT INTO blog_read (user_id, blog_id, read_at)
		SELECT ?, id, ? FROM blog WHERE user_id = ? AND create_time <= ? ON CONFLICT DO NOTHING RETURNING blog_id`), user, us(at), author, us(upTo))
	if err != nil {
		return nil, sqldb.Map(err, "mark author read")
	}
	defer rows.Close()
	ids := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, sqldb.Map(err, "mark author read")
		}
		ids = append(ids, id)
	}
	return ids, sqldb.Map(rows.Err(), "mark author read")
}

// markAuthorReadMySQL is MarkAuthorRead without INSERT … RETURNING: in one transaction, the
// author's unread posts up to upTo, then one no-op-on-conflict insert each, keeping the ids
// whose insert affected a row (so a post marked read concurrently is reported once).
func (s *Store) markAuthorReadMySQL(ctx context.Context, user, author int64, upTo, at time.Time) ([]int64, error) {
	ids := []int64{}
	err := sqldb.InTx(ctx, s.db, func(tx *sql.Tx) error {
		ids = ids[:0]
		rows, err := tx.QueryContext(ctx, `SELECT b.id FROM blog b WHERE b.user_id = ? AND b.create_time <= ?
			AND NOT EXISTS (SELECT 1 FROM blog_read r WHERE r.user_id = ? AND r.blog_id = b.id) ORDER BY b.id`, author, us(upTo), user)
		if err != nil {
			return sqldb.Map(err, "mark author read")
		}
		var unread []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return sqldb.Map(err, "mark author read")
			}
			unread = append(unread, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return sqldb.Map(err, "mark author read")
		}
		for _, id := range unread {
			res, err := tx.ExecContext(ctx, "INSERT INTO blog_read (user_id, blog_id, read_at) VALUES (?, ?, ?)"+s.doNothing("blog_read", "user_id"), user, id, us(at))
			if err != nil {
				return sqldb.Map(err, "mark author read")
			}
			if n, err := res.RowsAffected(); err != nil {
				return sqldb.Map(err, "mark author read")
			} else if n == 1 {
				ids = append(ids, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// membership returns which of posts have a row in table for user.
func (s *Store) membership(ctx context.Context, op, table string, user int64, posts []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(posts) == 0 {
		return out, nil
	}
	if err := checkIDs(posts); err != nil {
		return nil, err
	}
	marks, args := inList(posts)
	rows, err := s.db.QueryContext(ctx, s.db.Rebind("SELECT blog_id FROM "+table+" WHERE user_id = ? AND blog_id IN ("+marks+")"), append([]any{user}, args...)...)
	if err != nil {
		return nil, sqldb.Map(err, op)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, sqldb.Map(err, op)
		}
		out[id] = true
	}
	return out, sqldb.Map(rows.Err(), op)
}

// ReadOf implements feed.Source.
func (s *Store) ReadOf(ctx context.Context, user int64, posts []int64) (map[int64]bool, error) {
	return s.membership(ctx, "read of", "blog_read", user, posts)
}

// LikedOf implements feed.Source.
func (s *Store) LikedOf(ctx context.Context, user int64, posts []int64) (map[int64]bool, error) {
	return s.membership(ctx, "liked of", "blog_like", user, posts)
}

// Like implements feed.Source.
func (s *Store) Like(ctx context.Context, user, post int64) (bool, error) {
	return s.like(ctx, user, post, true)
}

// Unlike implements feed.Source.
func (s *Store) Unlike(ctx context.Context, user, post int64) (bool, error) {
	return s.like(ctx, user, post, false)
}

// like changes the like row and the post's count in one transaction, the count only when the
// row changed.
func (s *Store) like(ctx context.Context, user, post int64, like bool) (bool, error) {
	if err := positive("user and post", user, post); err != nil {
		return false, err
	}
	changed := false
	err := sqldb.InTx(ctx, s.db, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, s.db.Rebind("SELECT COUNT(*) FROM blog WHERE id = ?"), post).Scan(&exists); err != nil {
			return sqldb.Map(err, "like")
		}
		if exists == 0 {
			return redstate.Errorf(redstate.ENOTFOUND, "post %d not found", post)
		}
		q, delta := "INSERT INTO blog_like (user_id, blog_id) VALUES (?, ?)"+s.doNothing("blog_like", "user_id"), "+ 1"
		if !like {
			q, delta = "DELETE FROM blog_like WHERE user_id = ? AND blog_id = ?", "- 1"
		}
		res, err := tx.ExecContext(ctx, s.db.Rebind(q), user, post)
		if err != nil {
			return sqldb.Map(err, "like")
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return sqldb.Map(err, "like")
		}
		changed = true
		_, err = tx.ExecContext(ctx, s.db.Rebind("UPDATE blog SET liked = liked "+delta+" WHERE id = ?"), post)
		return sqldb.Map(err, "like")
	})
	return changed, err
}

// Authors implements feed.Source.
func (s *Store) Authors(ctx context.Context, after int64, limit int) ([]int64, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.db.Rebind("SELECT DISTINCT user_id FROM blog WHERE user_id > ? ORDER BY user_id LIMIT "+strconv.Itoa(limit)), after)
	if err != nil {
		return nil, sqldb.Map(err, "authors")
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, sqldb.Map(err, "authors")
		}
		out = append(out, id)
	}
	return out, sqldb.Map(rows.Err(), "authors")
}

// repairGen numbers repair marks: a mark written again gets a new number, so RepairDone of the
// older one leaves it.
var repairGen atomic.Int64

// nextGen returns a repair generation: the clock in ns, strictly increasing in the process.
func nextGen() int64 {
	for {
		last := repairGen.Load()
		g := max(time.Now().UnixNano(), last+1)
		if repairGen.CompareAndSwap(last, g) {
			return g
		}
	}
}

// MarkRepair implements feed.Source.
func (s *Store) MarkRepair(ctx context.Context, kind string, id int64) error {
	if err := feed.ValidRepairKind(kind); err != nil {
		return err
	}
	if err := positive("id", id); err != nil {
		return err
	}
	upsert := " ON CONFLICT (kind, id) DO UPDATE SET gen = excluded.gen"
	if s.db.Dialect == sqldb.MySQL {
		upsert = " ON DUPLICATE KEY UPDATE gen = VALUES(gen)"
	}
	_, err := s.db.ExecContext(ctx, s.db.Rebind("INSERT INTO feed_repair (kind, id, gen) VALUES (?, ?, ?)"+upsert), kind, id, nextGen())
	return sqldb.Map(err, "mark repair")
}

// Repairs implements feed.Source.
func (s *Store) Repairs(ctx context.Context, limit int) ([]feed.Repair, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, "SELECT kind, id, gen FROM feed_repair ORDER BY gen LIMIT "+strconv.Itoa(limit))
	if err != nil {
		return nil, sqldb.Map(err, "repairs")
	}
	defer rows.Close()
	out := []feed.Repair{}
	for rows.Next() {
		var r feed.Repair
		if err := rows.Scan(&r.Kind, &r.ID, &r.Gen); err != nil {
			return nil, sqldb.Map(err, "repairs")
		}
		out = append(out, r)
	}
	return out, sqldb.Map(rows.Err(), "repairs")
}

// RepairDone implements feed.Source.
func (s *Store) RepairDone(ctx context.Context, r feed.Repair) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind("DELETE FROM feed_repair WHERE kind = ? AND id = ? AND gen = ?"), r.Kind, r.ID, r.Gen)
	return sqldb.Map(err, "repair done")
}
