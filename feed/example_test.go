package feed_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/sqldb"
)

// redisAddr is your Redis; the tests start their own.
var redisAddr = "127.0.0.1:6379"

// The feed embedded in a Go program with its own go-redis client: posts and follows in SQL
// (here SQLite in a temporary directory; PostgreSQL or MySQL in production), unread state in
// Redis. A user follows two authors, they publish, the posts are fanned out to the user's
// unread sets, and the user reads one.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	dir, err := os.MkdirTemp("", "feed-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(dir, "feed.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	posts, err := sqlfeed.New(ctx, db) // creates its tables
	if err != nil {
		log.Fatal(err)
	}
	// Publish fans a post out before it returns; set Options.Enqueue (FanOutEnqueuer, with a
	// queue.Worker running FanOutHandler) to fan out durably through the job queue instead.
	svc, err := feed.NewService(posts, redisfeed.New(client, redstate.KeyPrefix{}), feed.Options{})
	if err != nil {
		log.Fatal(err)
	}

	const reader, ada, bob = 2001, 1001, 1002
	for _, author := range []int64{ada, bob} {
		if _, err := svc.Follow(ctx, reader, author); err != nil {
			log.Fatal(err)
		}
	}
	hello, err := svc.Publish(ctx, feed.Post{AuthorID: ada, Title: "hello"})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []feed.Post{{AuthorID: ada, Title: "again"}, {AuthorID: bob, Title: "hi"}} {
		if _, err := svc.Publish(ctx, p); err != nil {
			log.Fatal(err)
		}
	}
	perAuthor, total, err := svc.UnreadCounts(ctx, reader)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unread:", perAuthor, "total", total)

	if err := svc.MarkRead(ctx, reader, hello.ID); err != nil {
		log.Fatal(err)
	}
	perAuthor, total, err = svc.UnreadCounts(ctx, reader)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unread:", perAuthor, "total", total)
	page, err := svc.QueryPageNumber(ctx, reader, ada, feed.StatusUnread, 1, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range page.Posts {
		fmt.Println("unread from ada:", p.Title)
	}
	// Output:
	// unread: map[1001:2 1002:1] total 3
	// unread: map[1001:1 1002:1] total 2
	// unread from ada: again
}
