package sqlfeed_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/memfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// seedConfig maps the feed onto an existing blog application's tables: Blog and the follow
// table tb_follow.
func seedConfig(owns bool) feed.SQLConfig {
	return feed.SQLConfig{OwnsTables: owns, TimeZone: "Asia/Shanghai",
		Posts: feed.PostsTable{Table: "Blog", ID: "id", Author: "user_id", Title: "title", Content: "content", Images: "images",
			Liked: "liked", Created: "create_time", Updated: "update_time"},
		Follows: feed.FollowsTable{Table: "tb_follow", Follower: "user_id", Author: "follow_user_id", Created: "create_time"}}
}

// createSeedTables creates that application's Blog (id, user_id, title, content, images, liked,
// create_time, update_time; date-times without zone) and follow table as the team's
// application has them, leaving out the columns named in without. On MySQL the date-times are
// DATETIME(6), as the Source suite needs microseconds.
func createSeedTables(t *testing.T, db *sqldb.DB, without ...string) {
	t.Helper()
	id, dt := "id INTEGER PRIMARY KEY AUTOINCREMENT", "DATETIME"
	switch db.Dialect {
	case sqldb.Postgres:
		id, dt = "id BIGSERIAL PRIMARY KEY", "TIMESTAMP"
	case sqldb.MySQL:
		id, dt = "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY", "DATETIME(6)"
	}
	cols := []string{id, "user_id BIGINT NOT NULL", "title VARCHAR(255) NOT NULL", "content TEXT", "images VARCHAR(2048)",
		"liked INT DEFAULT 0", "create_time " + dt + " NOT NULL", "update_time " + dt + " NOT NULL"}
	cols = slices.DeleteFunc(cols, func(c string) bool { return slices.Contains(without, strings.Fields(c)[0]) })
	for _, stmt := range []string{
		`CREATE TABLE "Blog" (` + strings.Join(cols, ", ") + `)`,
		`CREATE TABLE tb_follow (user_id BIGINT NOT NULL, follow_user_id BIGINT NOT NULL, create_time ` + dt + ` NOT NULL,
			PRIMARY KEY (user_id, follow_user_id))`,
	} {
		if _, err := db.ExecContext(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSeedSchema_SourceSuiteOwned runs the Source conformance suite on that application's tables,
// mapped in place and owned (redstate writes them), with date-time columns in Asia/Shanghai.
func TestSeedSchema_SourceSuiteOwned(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		createSeedTables(t, db)
		s, err := sqlfeed.Open(context.Background(), db, seedConfig(true))
		if err != nil {
			t.Fatal(err)
		}
		feedtest.RunSourceSuite(t, func(*testing.T) feed.Source { return s })
	})
}

// guardWrites makes every write to the team's tables fail (a trigger: RAISE on SQLite and
// PostgreSQL, SIGNAL SQLSTATE '45000' on MySQL), so a write by redstate could not pass
// unnoticed.
func guardWrites(t *testing.T, db *sqldb.DB) {
	t.Helper()
	var stmts []string
	for _, table := range []string{`"Blog"`, "tb_follow"} {
		name := strings.Trim(table, `"`)
		if db.Dialect == sqldb.Postgres {
			stmts = append(stmts, `CREATE TRIGGER no_write_`+name+` BEFORE INSERT OR UPDATE OR DELETE ON `+table+` FOR EACH STATEMENT EXECUTE FUNCTION no_write()`)
			continue
		}
		for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
			if db.Dialect == sqldb.MySQL {
				stmts = append(stmts, `CREATE TRIGGER no_`+op+`_`+name+` BEFORE `+op+` ON `+table+` FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'redstate wrote `+name+`'`)
				continue
			}
			stmts = append(stmts, `CREATE TRIGGER no_`+op+`_`+name+` BEFORE `+op+` ON `+table+` BEGIN SELECT RAISE(ABORT, 'redstate wrote `+name+`'); END`)
		}
	}
	if db.Dialect == sqldb.Postgres {
		stmts = append([]string{`CREATE FUNCTION no_write() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'redstate wrote %', TG_TABLE_NAME; END $f$`}, stmts...)
	}
	for _, stmt := range stmts {
		if _, err := db.ExecContext(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
}

// schemaOf describes the team's tables and their indexes, to show no DDL touched them.
func schemaOf(t *testing.T, db *sqldb.DB) string {
	t.Helper()
	q := `SELECT type || ':' || name || ':' || COALESCE(sql, '') FROM sqlite_master WHERE lower(tbl_name) IN ('blog', 'tb_follow') ORDER BY name`
	switch db.Dialect {
	case sqldb.Postgres:
		q = `SELECT table_name || ':' || column_name || ':' || data_type FROM information_schema.columns WHERE table_name IN ('Blog', 'tb_follow')
			UNION ALL SELECT indexname || ':' || indexdef FROM pg_indexes WHERE tablename IN ('Blog', 'tb_follow') ORDER BY 1`
	case sqldb.MySQL:
		q = `SELECT CONCAT(table_name, ':', column_name, ':', column_type, ':', is_nullable, ':', COALESCE(column_default, ''), ':', extra)
			FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name IN ('Blog', 'tb_follow')
			UNION ALL SELECT CONCAT(table_name, ':', index_name, ':', seq_in_index, ':', column_name) FROM information_schema.statistics
			WHERE table_schema = DATABASE() AND table_name IN ('Blog', 'tb_follow')
			UNION ALL SELECT CONCAT(event_object_table, ':', trigger_name, ':', action_statement) FROM information_schema.triggers
			WHERE trigger_schema = DATABASE() AND event_object_table IN ('Blog', 'tb_follow') ORDER BY 1`
	}
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

func count(t *testing.T, db *sqldb.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSeedSchema_NotOwned: on the team's tables (owns-tables false) redstate reads posts and
// follows in place, writes only its own tables, issues no DDL on theirs and refuses the
// writes that would touch them; Announce and FollowsChanged bring the feed in line with what
// the team's application wrote.
func TestSeedSchema_NotOwned(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		createSeedTables(t, db)
		// The team's application: author 1001 has two posts, user 2001 follows 1001.
		for _, stmt := range []string{
			`INSERT INTO "Blog" (user_id, title, content, images, liked, create_time, update_time) VALUES (1001, 'first', 'c1', 'a.png,b.png', 3, '2023-06-13 20:15:00', '2023-06-13 20:15:00')`,
			`INSERT INTO "Blog" (user_id, title, content, images, liked, create_time, update_time) VALUES (1001, 'second', NULL, NULL, 0, '2023-06-13 20:16:00.5', '2023-06-13 20:16:00.5')`,
			`INSERT INTO "Blog" (user_id, title, content, images, liked, create_time, update_time) VALUES (1001, 'before the follow', 'c0', '', 0, '2023-06-13 19:00:00', '2023-06-13 19:00:00')`,
			`INSERT INTO "Blog" (user_id, title, content, images, liked, create_time, update_time) VALUES (1001, 'third', 'c3', '["x.png"]', 0, '2023-06-13 21:00:00', '2023-06-13 21:00:00')`,
			`INSERT INTO tb_follow (user_id, follow_user_id, create_time) VALUES (2001, 1001, '2023-06-13 20:00:00')`,
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		guardWrites(t, db)
		before := schemaOf(t, db)
		s, err := sqlfeed.Open(ctx, db, seedConfig(false))
		if err != nil {
			t.Fatal(err)
		}
		if after := schemaOf(t, db); after != before {
			t.Fatalf("Open changed the team's schema:\n%s\nwas\n%s", after, before)
		}

		refs, err := s.AuthorPosts(ctx, 1001, feed.Cursor{}, 10)
		if err != nil || len(refs) != 4 {
			t.Fatalf("AuthorPosts = %+v, %v", refs, err)
		}
		third, second, first := refs[0].ID, refs[1].ID, refs[2].ID
		// 20:16:00.5 in Asia/Shanghai is 12:16:00.5 UTC.
		if want := time.Date(2023, 6, 13, 12, 16, 0, 500e6, time.UTC); !refs[1].CreateTime.Equal(want) {
			t.Fatalf("second post's time = %v, want %v", refs[1].CreateTime, want)
		}
		if page, err := s.AuthorPosts(ctx, 1001, feed.Cursor{Time: refs[1].CreateTime, ID: refs[1].ID}, 1); err != nil || len(page) != 1 || page[0].ID != first {
			t.Fatalf("AuthorPosts after the second post = %+v, %v; want the first", page, err)
		}
		posts, err := s.Posts(ctx, []int64{first, second})
		if err != nil || posts[first].Title != "first" || !slices.Equal(posts[first].Images, []string{"a.png", "b.png"}) ||
			posts[first].Liked != 3 || posts[second].Content != "" || len(posts[second].Images) != 0 {
			t.Fatalf("Posts = %+v, %v", posts, err)
		}
		if n, err := s.UnreadCount(ctx, 2001, 1001); err != nil || n != 3 {
			t.Fatalf("UnreadCount = %d, %v; want 3 (the posts since the follow)", n, err)
		}
		if _, err := s.MarkRead(ctx, 2001, first, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkRepair(ctx, feed.RepairUser, 2001); err != nil {
			t.Fatal(err)
		}
		if n, err := s.UnreadCount(ctx, 2001, 1001); err != nil || n != 2 {
			t.Fatalf("UnreadCount after a read = %d, %v; want 2", n, err)
		}
		for name, err := range map[string]error{
			"CreatePost": func() error { _, err := s.CreatePost(ctx, feed.Post{AuthorID: 1001, Title: "x"}); return err }(),
			"Follow":     func() error { _, err := s.Follow(ctx, 2002, 1001, time.Now()); return err }(),
			"Unfollow":   func() error { _, err := s.Unfollow(ctx, 2001, 1001); return err }(),
			"Like":       func() error { _, err := s.Like(ctx, 2001, first); return err }(),
		} {
			if !redstate.IsCode(err, redstate.ECONFLICT) || !strings.Contains(err.Error(), "owns-tables") {
				t.Errorf("%s on tables redstate does not own = %v, want ECONFLICT naming feed.sql.owns-tables", name, err)
			}
		}

		// The service: the team's app saves a post, then announces it.
		svc, err := feed.NewService(s, memfeed.New(), feed.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Publish(ctx, feed.Post{AuthorID: 1001, Title: "x"}); !redstate.IsCode(err, redstate.ECONFLICT) {
			t.Fatalf("Publish = %v, want ECONFLICT", err)
		}
		blogs, follows := count(t, db, `"Blog"`), count(t, db, "tb_follow")
		if p, err := svc.Announce(ctx, third); err != nil || p.Title != "third" || !slices.Equal(p.Images, []string{"x.png"}) {
			t.Fatalf("Announce = %+v, %v", p, err)
		}
		if _, err := svc.Announce(ctx, third+1000); !redstate.IsCode(err, redstate.ENOTFOUND) {
			t.Fatalf("Announce of a missing post = %v, want ENOTFOUND", err)
		}
		page, err := svc.QueryPage(ctx, 2001, 1001, "UNREAD", feed.Cursor{}, 10)
		if err != nil || len(page.Posts) != 2 || page.Posts[0].ID != third || page.Posts[1].ID != second {
			t.Fatalf("UNREAD page = %+v, %v; want the announced post and the unread one", page, err)
		}
		if err := svc.MarkRead(ctx, 2001, third); err != nil {
			t.Fatal(err)
		}
		counts, total, err := svc.UnreadCounts(ctx, 2001)
		if err != nil || total != 1 || counts[1001] != 1 {
			t.Fatalf("UnreadCounts = %v, %d, %v; want 1", counts, total, err)
		}
		if _, err := svc.Follow(ctx, 2001, 1002); !redstate.IsCode(err, redstate.ECONFLICT) {
			t.Fatalf("Follow = %v, want ECONFLICT", err)
		}
		if err := svc.FollowsChanged(ctx, 2001); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, `"Blog"`); n != blogs {
			t.Fatalf("Blog rows %d, want %d: redstate wrote the team's table", n, blogs)
		}
		if n := count(t, db, "tb_follow"); n != follows {
			t.Fatalf("tb_follow rows %d, want %d: redstate wrote the team's table", n, follows)
		}
	})
}

// TestSeedSchema_MissingColumnOrTable: a mapped table or column that does not exist is a clear
// error at start naming it and its configuration key, and nothing is created in its place.
func TestSeedSchema_MissingColumnOrTable(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		createSeedTables(t, db, "liked")
		_, err := sqlfeed.Open(ctx, db, seedConfig(false))
		if !redstate.IsCode(err, redstate.ENOTFOUND) || !strings.Contains(err.Error(), "feed.sql.posts.liked: table Blog has no column liked") {
			t.Fatalf("Open without Blog.liked = %v", err)
		}
		cfg := seedConfig(false)
		cfg.Follows.Table = "tb_follows"
		_, err = sqlfeed.Open(ctx, db, cfg)
		cfg.Posts.Liked = "title" // past the missing column
		if _, err2 := sqlfeed.Open(ctx, db, cfg); !redstate.IsCode(err2, redstate.ENOTFOUND) || !strings.Contains(err2.Error(), "feed.sql.follows.table: table tb_follows not found") {
			t.Fatalf("Open without the follows table = %v (first error %v)", err2, err)
		}
		if count(t, db, "tb_follow") != 0 {
			t.Fatal("tb_follow changed")
		}
		cfg = seedConfig(false)
		cfg.Posts.Liked, cfg.Posts.Created = "user_id", "title"
		if _, err := sqlfeed.Open(ctx, db, cfg); !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), "feed.sql.posts.created") {
			t.Fatalf("Open with a text time column = %v", err)
		}
		cfg.Posts.Created = "bad name"
		if _, err := sqlfeed.Open(ctx, db, cfg); !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), "feed.sql.posts.created") {
			t.Fatalf("Open with a bad identifier = %v", err)
		}
	})
}

// TestMappedOwned_CreatesMissingTables: with a mapping and owns-tables, redstate creates the
// mapped tables when missing (times in Unix microseconds) and the Source suite passes on them;
// a second Open keeps them.
func TestMappedOwned_CreatesMissingTables(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		cfg := seedConfig(true)
		cfg.Posts.Table, cfg.Follows.Table = "posts", "follows"
		s, err := sqlfeed.Open(context.Background(), db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sqlfeed.Open(context.Background(), db, cfg); err != nil {
			t.Fatalf("second Open: %v", err)
		}
		feedtest.RunSourceSuite(t, func(*testing.T) feed.Source { return s })
	})
}
