package cli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestServe_FeedOnTeamTables: serve on an existing blog application's Blog and tb_follow, owned by
// the team's application (feed.sql.owns-tables false), in SQLite, PostgreSQL and MariaDB: the app's
// post is announced and fanned out, the publish route is refused, and the team's tables keep their
// rows.
func TestServe_FeedOnTeamTables(t *testing.T) {
	for engine, dsn := range map[string]func(testing.TB) string{
		"sqlite":   func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "team.db") },
		"postgres": sqltest.PostgresDSN,
		"mysql":    sqltest.MariaDBDSN,
	} {
		t.Run(engine, func(t *testing.T) { serveOnTeamTables(t, dsn(t)) })
	}
}

// serveOnTeamTables is TestServe_FeedOnTeamTables on the database of dsn.
func serveOnTeamTables(t *testing.T, dsn string) {
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	id, dt := "id INTEGER PRIMARY KEY AUTOINCREMENT", "DATETIME"
	switch db.Dialect {
	case sqldb.Postgres:
		id, dt = "id BIGSERIAL PRIMARY KEY", "TIMESTAMP"
	case sqldb.MySQL:
		id = "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"
	}
	now := time.Now().UTC().Format("2006-01-02 15:04:05")
	for _, stmt := range []string{
		`CREATE TABLE "Blog" (` + id + `, user_id BIGINT NOT NULL, title VARCHAR(255) NOT NULL, content TEXT,
			images VARCHAR(2048), liked INT DEFAULT 0, create_time ` + dt + ` NOT NULL, update_time ` + dt + ` NOT NULL)`,
		`CREATE TABLE tb_follow (user_id BIGINT NOT NULL, follow_user_id BIGINT NOT NULL, create_time ` + dt + ` NOT NULL, PRIMARY KEY (user_id, follow_user_id))`,
		`INSERT INTO tb_follow VALUES (2001, 1001, '2020-01-01 00:00:00')`,
		`INSERT INTO "Blog" (user_id, title, content, images, liked, create_time, update_time) VALUES (1001, 'from the app', 'c', 'a.png', 0, '` + now + `', '` + now + `')`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	conf := filepath.Join(t.TempDir(), "redstate.yaml")
	yaml := `feed:
  sql:
    owns-tables: false
    posts: {table: Blog, id: id, author: user_id, title: title, content: content, images: images, liked: liked, created: create_time, updated: update_time}
    follows: {table: tb_follow, follower: user_id, author: follow_user_id, created: create_time}
`
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	base, logs, _, _ := startServe(t, "--config", conf, "--database", dsn)
	if status, body := request(t, http.MethodPost, base+"/v1/feed/posts", `{"userId":1001,"title":"x"}`); status != http.StatusConflict || !strings.Contains(body, "owns-tables") {
		t.Fatalf("publish = %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/feed/posts/1/announce", ""); status != http.StatusOK || !strings.Contains(body, `"title":"from the app"`) {
		t.Fatalf("announce = %d %s", status, body)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/unread-counts", "")
		if strings.Contains(body, `"total":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the announced post never counted: %s\n%s", body, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/feed/users/2001/following/sync", ""); status != http.StatusNoContent {
		t.Fatalf("following sync = %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/feed/users/2001/read/1", ""); status != http.StatusNoContent {
		t.Fatalf("read = %d %s", status, body)
	}
	if _, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/unread-counts", ""); !strings.Contains(body, `"total":0`) {
		t.Fatalf("counts after the read = %s", body)
	}
}
