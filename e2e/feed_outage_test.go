package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
)

// TestFeed_OutageConvergesWithoutCommands: redis-server (AOF, fsync
// always) is SIGKILLed while posts are published (to a fan-out and a hybrid author), liked and
// unliked, users follow, unfollow and follow again, read and mark all read, and pages and
// counts are read; it is restarted, and then, without any command, within a bounded time every
// API answer (ALL and UNREAD pages with liked counts and isLike, unread counts) and every Redis
// key (users' states, author indexes, post caches) equals the SQL truth. While Redis is down,
// reads after the breaker opened answer at SQL speed. In the second run the redstate process
// is SIGKILLed too before Redis returns, and a new one (same SQL) repairs what it missed.
func TestFeed_OutageConvergesWithoutCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	t.Run("same process", func(t *testing.T) { feedOutage(t, false) })
	t.Run("process killed during the outage", func(t *testing.T) { feedOutage(t, true) })
}

// feedOutage is TestFeed_OutageConvergesWithoutCommands; killServer kills the serving process
// while Redis is down and starts a new one after Redis returned.
func feedOutage(t *testing.T, killServer bool) {
	t.Setenv("REDSTATE_FEED_HYBRID_THRESHOLD", "2") // 302 (3 followers) is hybrid, 301 fans out
	t.Setenv("REDSTATE_FEED_REPAIR_INTERVAL", "1s")
	t.Setenv("REDSTATE_FEED_BREAKER_WAIT_DURATION_IN_OPEN_STATE", "2s")
	rds := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	s := startServer(t, "--redis", rds.URL)
	call := func(method, path string, want int) []byte {
		t.Helper()
		status, resp, _ := s.do(t, method, path, "")
		if status != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, status, resp, want)
		}
		return resp
	}
	publish := func(author int64) int64 {
		t.Helper()
		status, resp, _ := s.do(t, http.MethodPost, "/v1/feed/posts", fmt.Sprintf(`{"userId":%d,"title":"t","content":"c"}`, author))
		if status != http.StatusCreated {
			t.Fatalf("publish = %d %s", status, resp)
		}
		var p struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(resp, &p)
		return p.ID
	}
	userPath := func(u int64) string { return "/v1/feed/users/" + strconv.FormatInt(u, 10) }
	follow := func(u, a int64) {
		call(http.MethodPut, userPath(u)+"/following/"+strconv.FormatInt(a, 10), http.StatusOK)
	}
	unfollow := func(u, a int64) {
		call(http.MethodDelete, userPath(u)+"/following/"+strconv.FormatInt(a, 10), http.StatusOK)
	}
	like := func(u, p int64, on bool) {
		m := http.MethodPut
		if !on {
			m = http.MethodDelete
		}
		call(m, userPath(u)+"/likes/"+strconv.FormatInt(p, 10), http.StatusOK)
	}
	read := func(u, p int64) {
		call(http.MethodPost, userPath(u)+"/read/"+strconv.FormatInt(p, 10), http.StatusNoContent)
	}
	const fan, big = 301, 302
	authors := []int64{fan, big}
	users := []int64{401, 402, 403, 404}
	pages := func() {
		for _, u := range users {
			call(http.MethodGet, userPath(u)+"/unread-counts", http.StatusOK)
			for _, a := range authors {
				for _, st := range []string{"ALL", "UNREAD"} {
					call(http.MethodGet, fmt.Sprintf("%s/authors/%d/posts?readStatus=%s&size=10", userPath(u), a, st), http.StatusOK)
				}
			}
		}
	}

	follow(401, fan)
	follow(402, fan)
	for _, u := range []int64{401, 402, 403} {
		follow(u, big)
	}
	var posts []int64
	for range 3 {
		posts = append(posts, publish(fan), publish(big))
	}
	read(401, posts[0])
	like(401, posts[1], true)
	like(402, posts[0], true)
	eventually(t, 30*time.Second, "the fan-outs", func() bool {
		return strings.Contains(string(call(http.MethodGet, userPath(402)+"/unread-counts", http.StatusOK)), `"total":6`)
	})
	pages() // builds users' states, author indexes and post caches

	rds.Kill(t)
	for i := range 12 { // the breaker opens on these
		u := users[i%len(users)]
		call(http.MethodGet, fmt.Sprintf("%s/authors/%d/posts?readStatus=UNREAD&size=10", userPath(u), fan), http.StatusOK)
	}
	var lat []time.Duration
	for i := range 40 {
		u, a := users[i%len(users)], authors[i%2]
		start := time.Now()
		call(http.MethodGet, fmt.Sprintf("%s/authors/%d/posts?readStatus=UNREAD&size=10", userPath(u), a), http.StatusOK)
		call(http.MethodGet, userPath(u)+"/unread-counts", http.StatusOK)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	p95 := lat[len(lat)*95/100]
	t.Logf("degraded reads (unread page + counts) with Redis down: p50 %s, p95 %s, max %s", lat[len(lat)/2], p95, lat[len(lat)-1])
	if p95 > 250*time.Millisecond {
		t.Errorf("degraded reads p95 %s: they wait for Redis (the breaker should answer from SQL at once)", p95)
	}
	if m := string(call(http.MethodGet, "/metrics", http.StatusOK)); !strings.Contains(m, `redstate_breaker_state{block="feed"} 2`) {
		t.Errorf("metrics do not show the feed breaker open")
	}

	for range 2 {
		posts = append(posts, publish(fan), publish(big))
	}
	like(403, posts[0], true)            // a cached post
	like(402, posts[len(posts)-1], true) // a post published during the outage
	like(401, posts[1], false)           // unlike
	unfollow(402, fan)                   // unfollow and follow again: the old unread posts are gone
	follow(402, fan)
	follow(404, fan)
	read(401, posts[3])                                                         // hybrid author's post
	call(http.MethodPost, userPath(401)+"/authors/301/read-all", http.StatusOK) // mark all read
	unfollow(403, big)
	pages()
	posts = append(posts, publish(fan))

	if killServer {
		s.kill()
	}
	rds.Restart(t)
	restarted := time.Now()
	if killServer {
		s = startServer(t, "--redis", rds.URL)
	}

	db, err := sqldb.Open(context.Background(), "sqlite:"+dataDir(t)+"/redstate.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src, err := sqlfeed.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer client.Close()
	cache := redisfeed.New(client, redstate.KeyPrefix{})
	svc, err := feed.NewService(src, cache, feed.Options{HybridThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	var diff string
	deadline := restarted.Add(60 * time.Second)
	for {
		diff = outageDiff(t, s, src, cache, svc, users, authors)
		if diff == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after Redis returned the feed still differs from SQL: %s\nserver logs:\n%s", diff, s.Logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("every API answer and Redis key equals SQL %s after Redis was restarted", time.Since(restarted).Round(10*time.Millisecond))
}

// outageDiff returns the first difference between the feed as served (and as kept in Redis)
// and SQL, or "".
func outageDiff(t *testing.T, s *server, src *sqlfeed.Store, cache *redisfeed.Cache, svc *feed.Service, users, authors []int64) string {
	t.Helper()
	ctx := context.Background()
	// Redis keys: every user's state built (not left for a lazy rebuild) and equal to SQL,
	// every author index and post cache equal to SQL, every read mark in the read set.
	for _, u := range users {
		built, err := cache.Built(ctx, u)
		if err != nil {
			return fmt.Sprintf("Redis: %v", err)
		}
		if !built {
			return fmt.Sprintf("user %d: Redis state not built", u)
		}
	}
	for _, u := range users {
		d, err := svc.VerifyUser(ctx, u)
		if err != nil || len(d) > 0 {
			return fmt.Sprintf("user %d: drift %+v %v", u, d, err)
		}
	}
	for _, a := range authors {
		d, err := svc.VerifyAuthor(ctx, a)
		if err != nil || d != nil {
			return fmt.Sprintf("author %d: drift %+v %v", a, d, err)
		}
	}
	// Read sets: every read mark SQL has of a followed author's post since the follow.
	for _, u := range users {
		follows, err := src.Following(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range follows {
			refs, err := src.AuthorPosts(ctx, f.Author, feed.Cursor{}, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range refs {
				if !r.CreateTime.Before(f.Since) {
					ids = append(ids, r.ID)
				}
			}
			inSQL, err := src.ReadOf(ctx, u, ids)
			if err != nil {
				t.Fatal(err)
			}
			inRedis, err := cache.ReadOf(ctx, u, f.Author, ids)
			if err != nil {
				return fmt.Sprintf("Redis: %v", err)
			}
			for id := range inSQL {
				if !inRedis[id] {
					return fmt.Sprintf("user %d: post %d read in SQL, not read in Redis", u, id)
				}
			}
		}
	}
	// API answers.
	for _, u := range users {
		var counts struct {
			Counts map[string]int64 `json:"counts"`
			Total  int64            `json:"total"`
		}
		status, body, _ := s.do(t, http.MethodGet, fmt.Sprintf("/v1/feed/users/%d/unread-counts", u), "")
		if status != http.StatusOK || json.Unmarshal(body, &counts) != nil {
			return fmt.Sprintf("counts of %d: %d %s", u, status, body)
		}
		var total int64
		for _, a := range authors {
			n, err := src.UnreadCount(ctx, u, a)
			if err != nil {
				t.Fatal(err)
			}
			total += n
			if counts.Counts[strconv.FormatInt(a, 10)] != n {
				return fmt.Sprintf("user %d author %d: API count %d, SQL %d", u, a, counts.Counts[strconv.FormatInt(a, 10)], n)
			}
			for _, status := range []string{"ALL", "UNREAD"} {
				got := apiPages(t, s, u, a, status)
				want := sqlPages(t, src, u, a, status)
				if got != want {
					return fmt.Sprintf("user %d author %d %s:\n API %s\n SQL %s", u, a, status, got, want)
				}
			}
		}
		if counts.Total != total {
			return fmt.Sprintf("user %d: API total %d, SQL %d", u, counts.Total, total)
		}
	}
	return ""
}

// apiPages lists every post of a feed query, page by page (size 3, by cursor), as
// "id:liked:isLike" in order.
func apiPages(t *testing.T, s *server, u, a int64, status string) string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		path := fmt.Sprintf("/v1/feed/users/%d/authors/%d/posts?readStatus=%s&size=3", u, a, status)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		code, body, _ := s.do(t, http.MethodGet, path, "")
		var page struct {
			Records []struct {
				ID    int64 `json:"id"`
				Liked int64 `json:"liked"`
				Like  bool  `json:"isLike"`
			} `json:"records"`
			Next string `json:"next"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
			return fmt.Sprintf("HTTP %d %s", code, body)
		}
		for _, r := range page.Records {
			out = append(out, fmt.Sprintf("%d:%d:%t", r.ID, r.Liked, r.Like))
		}
		if page.Next == "" {
			return strings.Join(out, " ")
		}
		cursor = page.Next
	}
}

// sqlPages is what apiPages must answer, from SQL.
func sqlPages(t *testing.T, src *sqlfeed.Store, u, a int64, status string) string {
	t.Helper()
	ctx := context.Background()
	var refs []feed.PostRef
	var err error
	if status == "ALL" {
		refs, err = src.AuthorPosts(ctx, a, feed.Cursor{}, 1000)
	} else {
		refs, err = src.UnreadPosts(ctx, u, a, feed.Cursor{}, 1000)
	}
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	posts, err := src.Posts(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	liked, err := src.LikedOf(ctx, u, ids)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, fmt.Sprintf("%d:%d:%t", id, posts[id].Liked, liked[id]))
	}
	return strings.Join(out, " ")
}
