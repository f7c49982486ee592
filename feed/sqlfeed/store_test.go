package sqlfeed_test

import (
	"context"
	"testing"

	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

func TestMain(m *testing.M) { sqltest.Main(m) }

// TestSourceSuite runs the Source conformance suite on SQLite, PostgreSQL and MariaDB.
func TestSourceSuite(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s, err := sqlfeed.New(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		feedtest.RunSourceSuite(t, func(*testing.T) feed.Source { return s })
	})
}

// TestNewMigratesOnce: two stores on one database (two processes at start-up) both work.
func TestNewMigratesOnce(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		a, err := sqlfeed.New(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sqlfeed.New(ctx, db)
		if err != nil {
			t.Fatalf("second New: %v", err)
		}
		p, err := a.CreatePost(ctx, feed.Post{AuthorID: 1, Title: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Posts(ctx, []int64{p.ID}); err != nil || got[p.ID].Title != "x" {
			t.Fatalf("Posts through the second store = %v, %v", got, err)
		}
	})
}
