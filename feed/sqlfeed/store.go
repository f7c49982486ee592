// Package sqlfeed is the SQL feed.Source (SQLite embedded, PostgreSQL or MySQL/MariaDB in
// production): the seed's blog table plus follows, read marks and likes. Pages are keyset
// pages on (create_time, id); unread is one NOT EXISTS query; likes change the like row and
// the post's count in one transaction. MySQL has neither RETURNING nor ON CONFLICT: there an
// insert that may meet an existing row is INSERT … ON DUPLICATE KEY UPDATE (a no-op update
// for "do nothing", whose affected-row count is 0), and ids come from LastInsertId.
//
// The posts and follows tables and their columns are those of a feed.SQLConfig (Open): by default
// redstate's own blog and follow tables; mapped, a team's existing tables (such as a Blog table),
// read in place and, unless the configuration says redstate owns them, never written.
package sqlfeed

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
	// owns says whether the posts and follows tables may be written (feed.sql.owns-tables).
	owns bool
	// names turns the {token}s of a statement into the mapped, quoted names (see Open).
	names *strings.Replacer
	// created and since are the posts' and follows' time columns.
	created, since sqldb.TimeColumn
	// updated is the posts' update time column.
	updated sqldb.TimeColumn
}

var _ feed.Source = (*Store)(nil)

// New migrates redstate's own feed schema (feed.DefaultSQLConfig) on db and returns a Store.
// Errors: those of sqldb.Migrate.
func New(ctx context.Context, db *sqldb.DB) (*Store, error) {
	return Open(ctx, db, feed.DefaultSQLConfig())
}

// Open returns a Store on the tables of cfg (feed.sql). With feed.DefaultSQLConfig it
// migrates redstate's own schema (component Component), as New. Otherwise it migrates only
// redstate's own tables (component StateComponent: read marks, likes, repair marks), creates
// the posts and follows tables when missing if cfg.OwnsTables, and then checks that both
// tables have every mapped column, reading each time column's type (integer: Unix
// microseconds; date-time: in cfg.TimeZone when it has no zone). It never issues DDL on a
// table it does not own. Errors: EINVALID (cfg, or a time column of another type), ENOTFOUND
// (a table or column is missing: the error names it and its feed.sql key), those of
// sqldb.Migrate.
func Open(ctx context.Context, db *sqldb.DB, cfg feed.SQLConfig) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "feed.sql")
	}
	s := &Store{db: db, owns: cfg.OwnsTables}
	if cfg.IsDefault() {
		if err := sqldb.Migrate(ctx, db, Component, Migrations); err != nil {
			return nil, err
		}
		s.created, s.since, s.updated = sqldb.MicrosColumn(db.Dialect), sqldb.MicrosColumn(db.Dialect), sqldb.MicrosColumn(db.Dialect)
		s.names = replacer(db.Dialect, cfg, s.created, s.updated, s.since)
		return s, nil
	}
	if err := sqldb.Migrate(ctx, db, StateComponent, StateMigrations); err != nil {
		return nil, err
	}
	if cfg.OwnsTables {
		for _, stmt := range ownedTables(db.Dialect, cfg) {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return nil, sqldb.Map(err, "create the feed.sql tables")
			}
		}
	}
	loc, _ := cfg.Location()
	var err error
	if s.created, s.updated, err = checkTable(ctx, db, "feed.sql.posts", cfg.Posts.Table, cfg.PostColumns(), loc, "created", "updated"); err != nil {
		return nil, err
	}
	if s.since, _, err = checkTable(ctx, db, "feed.sql.follows", cfg.Follows.Table, cfg.FollowColumns(), loc, "created", ""); err != nil {
		return nil, err
	}
	if !s.created.SameKind(s.since) {
		return nil, redstate.Errorf(redstate.EINVALID, "feed.sql.posts.created (%s.%s) and feed.sql.follows.created (%s.%s) must have the same kind of type (both date-times or both integers of Unix microseconds): they are compared",
			cfg.Posts.Table, cfg.Posts.Created, cfg.Follows.Table, cfg.Follows.Created)
	}
	s.names = replacer(db.Dialect, cfg, s.created, s.updated, s.since)
	return s, nil
}

// checkTable checks that table has every column of cols (key, name) and returns the time
// columns named by the keys t1 and t2 ("" for none). Errors name the configuration key.
func checkTable(ctx context.Context, db *sqldb.DB, key, table string, cols [][2]string, loc *time.Location, t1, t2 string) (sqldb.TimeColumn, sqldb.TimeColumn, error) {
	var a, b sqldb.TimeColumn
	if _, err := sqldb.ColumnTypes(ctx, db, table, nil); err != nil {
		return a, b, redstate.Wrap(redstate.ErrorCode(err), err, key+".table: table "+table+" not found")
	}
	for _, kv := range cols {
		types, err := sqldb.ColumnTypes(ctx, db, table, []string{kv[1]})
		if err != nil {
			return a, b, redstate.Wrap(redstate.ErrorCode(err), err, fmt.Sprintf("%s.%s: table %s has no column %s", key, kv[0], table, kv[1]))
		}
		if kv[0] != t1 && kv[0] != t2 {
			continue
		}
		tc, err := sqldb.TimeColumnOf(db.Dialect, types[0], loc)
		if err != nil {
			return a, b, redstate.Wrap(redstate.EINVALID, err, fmt.Sprintf("%s.%s: column %s.%s", key, kv[0], table, kv[1]))
		}
		if kv[0] == t1 {
			a = tc
		} else {
			b = tc
		}
	}
	return a, b, nil
}

// replacer turns the tokens of the statements into quoted names: {P} and {F} the posts and
// follows tables; {id}, {author}, {title}, {content}, {images}, {liked}, {created}, {updated}
// the posts' columns and {follower}, {fauthor}, {since} the follows' (bare, for INSERT and
// UPDATE); {b.x} a posts column of alias b and {f.x} / {c.x} a follows column of alias f / c,
// time columns as their TimeColumn.Expr (for SELECT, WHERE and ORDER BY).
func replacer(d sqldb.Dialect, cfg feed.SQLConfig, created, updated, since sqldb.TimeColumn) *strings.Replacer {
	q := d.Quote
	var pairs []string
	add := func(token, name string) { pairs = append(pairs, "{"+token+"}", name) }
	add("P", q(cfg.Posts.Table))
	add("F", q(cfg.Follows.Table))
	for _, kv := range cfg.PostColumns() {
		add(kv[0], q(kv[1]))
		expr := "b." + q(kv[1])
		switch kv[0] {
		case "created":
			expr = created.Expr(expr)
		case "updated":
			expr = updated.Expr(expr)
		}
		add("b."+kv[0], expr)
	}
	bare := map[string]string{"follower": "follower", "author": "fauthor", "created": "since"}
	for _, kv := range cfg.FollowColumns() {
		add(bare[kv[0]], q(kv[1]))
		for _, alias := range []string{"f", "c"} {
			expr := alias + "." + q(kv[1])
			if kv[0] == "created" {
				expr = since.Expr(expr)
			}
			add(alias+"."+bare[kv[0]], expr)
		}
	}
	return strings.NewReplacer(pairs...)
}

// sql returns query with its tokens replaced (replacer) and its placeholders rebound.
func (s *Store) sql(query string) string { return s.db.Rebind(s.names.Replace(query)) }

// writable refuses a write to the posts or follows table when redstate does not own them.
func (s *Store) writable(what string) error {
	if s.owns {
		return nil
	}
	return redstate.Errorf(redstate.ECONFLICT, "%s: the posts and follows tables belong to your application (feed.sql.owns-tables is false); write them there and tell redstate (see docs/feed.md, Existing tables)", what)
}

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
	if err := s.writable("create post"); err != nil {
		return feed.Post{}, err
	}
	now := time.Now().UTC()
	if p.CreateTime.IsZero() {
		p.CreateTime = now
	}
	if p.UpdateTime.IsZero() {
		p.UpdateTime = p.CreateTime
	}
	p.CreateTime, p.UpdateTime = p.CreateTime.UTC().Truncate(time.Microsecond), p.UpdateTime.UTC().Truncate(time.Microsecond)
	if p.Images == nil {
		p.Images = []string{}
	}
	images, _ := json.Marshal(p.Images)
	cols, args := "{author}, {title}, {content}, {images}, {liked}, {created}, {updated}", []any{p.AuthorID, p.Title, p.Content, string(images), p.Liked, s.created.Arg(p.CreateTime), s.updated.Arg(p.UpdateTime)}
	if p.ID > 0 {
		cols, args = "{id}, "+cols, append([]any{p.ID}, args...)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")
	insert := s.sql("INSERT INTO {P} (" + cols + ") VALUES (" + marks + ")")
	if s.db.Dialect == sqldb.MySQL {
		res, err := s.db.ExecContext(ctx, insert, args...)
		if err != nil {
			return feed.Post{}, sqldb.Map(err, "create post")
		}
		p.ID, err = res.LastInsertId()
		return p, sqldb.Map(err, "create post")
	}
	err := s.db.QueryRowContext(ctx, insert+s.sql(" RETURNING {id}"), args...).Scan(&p.ID)
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
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT {b.id}, {b.author}, {b.title}, {b.content}, {b.images}, {b.liked}, {b.created}, {b.updated} FROM {P} b WHERE {b.id} IN ("+marks+")"), args...)
	if err != nil {
		return nil, sqldb.Map(err, "read posts")
	}
	defer rows.Close()
	for rows.Next() {
		var p feed.Post
		var title, content, images sql.NullString
		var liked sql.NullInt64
		if err := rows.Scan(&p.ID, &p.AuthorID, &title, &content, &images, &liked, s.created.Dest(&p.CreateTime), s.updated.Dest(&p.UpdateTime)); err != nil {
			return nil, sqldb.Map(err, "read posts")
		}
		p.Title, p.Content, p.Images, p.Liked = title.String, content.String, parseImages(images.String), liked.Int64
		out[p.ID] = p
	}
	return out, sqldb.Map(rows.Err(), "read posts")
}

// parseImages reads an images column: a JSON array (what redstate writes) or, as a team's
// table may hold them, comma-separated URLs.
func parseImages(v string) []string {
	out := []string{}
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") {
		if json.Unmarshal([]byte(v), &out) == nil {
			return out
		}
		return []string{}
	}
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// refs runs a query returning (id, create_time) rows.
func (s *Store) refs(ctx context.Context, op, query string, args ...any) ([]feed.PostRef, error) {
	rows, err := s.db.QueryContext(ctx, s.sql(query), args...)
	if err != nil {
		return nil, sqldb.Map(err, op)
	}
	defer rows.Close()
	out := []feed.PostRef{}
	for rows.Next() {
		var r feed.PostRef
		if err := rows.Scan(&r.ID, s.created.Dest(&r.CreateTime)); err != nil {
			return nil, sqldb.Map(err, op)
		}
		out = append(out, r)
	}
	return out, sqldb.Map(rows.Err(), op)
}

// afterClause is the keyset condition "strictly after cursor, newest first".
func (s *Store) afterClause(c feed.Cursor) (string, []any) {
	if c.IsZero() {
		return "", nil
	}
	t := s.created.Arg(c.Time)
	return " AND ({b.created} < ? OR ({b.created} = ? AND {b.id} < ?))", []any{t, t, c.ID}
}

// AuthorPosts implements feed.Source.
func (s *Store) AuthorPosts(ctx context.Context, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	if err := positive("author", author); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	cond, cargs := s.afterClause(after)
	args := append([]any{author}, cargs...)
	return s.refs(ctx, "author posts", "SELECT {b.id}, {b.created} FROM {P} b WHERE {b.author} = ?"+cond+
		" ORDER BY {b.created} DESC, {b.id} DESC LIMIT "+strconv.Itoa(limit), args...)
}

// unreadFrom is the FROM/WHERE of a viewer's unread posts of an author.
const unreadFrom = ` FROM {P} b JOIN {F} f ON {f.fauthor} = {b.author} AND {f.follower} = ?
	WHERE {b.author} = ? AND {b.created} >= {f.since}
	AND NOT EXISTS (SELECT 1 FROM blog_read r WHERE r.user_id = {f.follower} AND r.blog_id = {b.id})`

// UnreadPosts implements feed.Source.
func (s *Store) UnreadPosts(ctx context.Context, viewer, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	if err := positive("viewer and author", viewer, author); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	cond, cargs := s.afterClause(after)
	args := append([]any{viewer, author}, cargs...)
	return s.refs(ctx, "unread posts", "SELECT {b.id}, {b.created}"+unreadFrom+cond+
		" ORDER BY {b.created} DESC, {b.id} DESC LIMIT "+strconv.Itoa(limit), args...)
}

// UnreadCount implements feed.Source.
func (s *Store) UnreadCount(ctx context.Context, viewer, author int64) (int64, error) {
	if err := positive("viewer and author", viewer, author); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.QueryRowContext(ctx, s.sql("SELECT COUNT(*)"+unreadFrom), viewer, author).Scan(&n)
	return n, sqldb.Map(err, "unread count")
}

// UnreadCounts implements feed.Source.
func (s *Store) UnreadCounts(ctx context.Context, viewer int64) (map[int64]int64, error) {
	if err := positive("viewer", viewer); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.sql(`SELECT {b.author}, COUNT(*)
		FROM {F} f JOIN {P} b ON {b.author} = {f.fauthor} AND {b.created} >= {f.since}
		WHERE {f.follower} = ?
		AND NOT EXISTS (SELECT 1 FROM blog_read r WHERE r.user_id = {f.follower} AND r.blog_id = {b.id})
		GROUP BY {b.author}`), viewer)
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
	if err := s.writable("follow"); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.sql("INSERT INTO {F} ({follower}, {fauthor}, {since}) VALUES (?, ?, ?)"+s.doNothing("{F}", "{follower}")),
		follower, author, s.since.Arg(since.Truncate(time.Microsecond)))
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
	if err := s.writable("unfollow"); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.sql("DELETE FROM {F} WHERE {follower} = ? AND {fauthor} = ?"), follower, author)
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
	f := feed.Follow{Follower: follower, Author: author}
	err := s.db.QueryRowContext(ctx, s.sql("SELECT {f.since} FROM {F} f WHERE {f.follower} = ? AND {f.fauthor} = ?"), follower, author).Scan(s.since.Dest(&f.Since))
	if err != nil {
		return feed.Follow{}, sqldb.Map(err, "follow of")
	}
	return f, nil
}

// follows runs a query returning (follower, author, since) rows.
func (s *Store) follows(ctx context.Context, op, query string, args ...any) ([]feed.Follow, error) {
	rows, err := s.db.QueryContext(ctx, s.sql(query), args...)
	if err != nil {
		return nil, sqldb.Map(err, op)
	}
	defer rows.Close()
	out := []feed.Follow{}
	for rows.Next() {
		var f feed.Follow
		if err := rows.Scan(&f.Follower, &f.Author, s.since.Dest(&f.Since)); err != nil {
			return nil, sqldb.Map(err, op)
		}
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
	return s.follows(ctx, "followers", "SELECT {f.follower}, {f.fauthor}, {f.since} FROM {F} f WHERE {f.fauthor} = ? AND {f.follower} > ? ORDER BY {f.follower} LIMIT "+strconv.Itoa(limit), author, after)
}

// FollowerCount implements feed.Source.
func (s *Store) FollowerCount(ctx context.Context, author int64) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, s.sql("SELECT COUNT(*) FROM {F} f WHERE {f.fauthor} = ?"), author).Scan(&n)
	return n, sqldb.Map(err, "follower count")
}

// Users implements feed.Source.
func (s *Store) Users(ctx context.Context, after int64, limit int) ([]int64, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT DISTINCT {f.follower} FROM {F} f WHERE {f.follower} > ? ORDER BY {f.follower} LIMIT "+strconv.Itoa(limit)), after)
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
	return s.follows(ctx, "following", "SELECT {f.follower}, {f.fauthor}, {f.since} FROM {F} f WHERE {f.follower} = ? ORDER BY {f.fauthor}", user)
}

// FollowingCounts implements feed.Source: one query, each author's followers counted by a
// correlated subquery on the follow_author index, stopped after upTo rows, and its posts
// probed on the blog_author_time index.
func (s *Store) FollowingCounts(ctx context.Context, user, upTo int64) ([]feed.FollowCount, error) {
	if err := positive("user", user); err != nil {
		return nil, err
	}
	count, args := "SELECT COUNT(*) FROM {F} c WHERE {c.fauthor} = {f.fauthor}", []any{user}
	switch {
	case upTo > 0 && s.db.Dialect == sqldb.MySQL:
		// MariaDB refuses an outer reference inside a derived table: the count is upTo when an
		// upTo-th follower exists (one index probe of upTo entries), else the full count.
		n := strconv.FormatInt(upTo, 10)
		count = "SELECT CASE WHEN (SELECT {c.follower} FROM {F} c WHERE {c.fauthor} = {f.fauthor} ORDER BY {c.follower} LIMIT 1 OFFSET " +
			strconv.FormatInt(upTo-1, 10) + ") IS NOT NULL THEN " + n + " ELSE (" + count + ") END"
	case upTo > 0:
		count, args = "SELECT COUNT(*) FROM (SELECT 1 FROM {F} c WHERE {c.fauthor} = {f.fauthor} LIMIT ?) x", []any{upTo, user}
	}
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT {f.follower}, {f.fauthor}, {f.since}, ("+count+
		"), CASE WHEN EXISTS (SELECT 1 FROM {P} b WHERE {b.author} = {f.fauthor}) THEN 1 ELSE 0 END"+
		" FROM {F} f WHERE {f.follower} = ? ORDER BY {f.fauthor}"), args...)
	if err != nil {
		return nil, sqldb.Map(err, "following counts")
	}
	defer rows.Close()
	out := []feed.FollowCount{}
	for rows.Next() {
		var f feed.FollowCount
		var posts int64
		if err := rows.Scan(&f.Follower, &f.Author, s.since.Dest(&f.Since), &f.Followers, &posts); err != nil {
			return nil, sqldb.Map(err, "following counts")
		}
		f.HasPosts = posts == 1
		out = append(out, f)
	}
	return out, sqldb.Map(rows.Err(), "following counts")
}

// MarkRead implements feed.Source.
func (s *Store) MarkRead(ctx context.Context, user, post int64, at time.Time) (bool, error) {
	if err := positive("user and post", user, post); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.sql(`INSERT INTO blog_read (user_id, blog_id, read_at)
		SELECT ?, {b.id}, ? FROM {P} b WHERE {b.id} = ?`+s.doNothing("blog_read", "user_id")), user, at.UnixMicro(), post)
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
	rows, err := s.db.QueryContext(ctx, s.sql(`INSERT INTO blog_read (user_id, blog_id, read_at)
		SELECT ?, {b.id}, ? FROM {P} b WHERE {b.author} = ? AND {b.created} <= ? ON CONFLICT DO NOTHING RETURNING blog_id`), user, at.UnixMicro(), author, s.created.Arg(upTo))
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
		rows, err := tx.QueryContext(ctx, s.sql(`SELECT {b.id} FROM {P} b WHERE {b.author} = ? AND {b.created} <= ?
			AND NOT EXISTS (SELECT 1 FROM blog_read r WHERE r.user_id = ? AND r.blog_id = {b.id}) ORDER BY {b.id}`), author, s.created.Arg(upTo), user)
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
			res, err := tx.ExecContext(ctx, "INSERT INTO blog_read (user_id, blog_id, read_at) VALUES (?, ?, ?)"+s.doNothing("blog_read", "user_id"), user, id, at.UnixMicro())
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
	if err := s.writable("like"); err != nil {
		return false, err
	}
	changed := false
	err := sqldb.InTx(ctx, s.db, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, s.sql("SELECT COUNT(*) FROM {P} b WHERE {b.id} = ?"), post).Scan(&exists); err != nil {
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
		_, err = tx.ExecContext(ctx, s.sql("UPDATE {P} SET {liked} = COALESCE({liked}, 0) "+delta+" WHERE {id} = ?"), post)
		return sqldb.Map(err, "like")
	})
	return changed, err
}

// Authors implements feed.Source.
func (s *Store) Authors(ctx context.Context, after int64, limit int) ([]int64, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT DISTINCT {b.author} FROM {P} b WHERE {b.author} > ? ORDER BY {b.author} LIMIT "+strconv.Itoa(limit)), after)
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
