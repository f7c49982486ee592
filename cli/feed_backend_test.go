package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestServe_FeedOverHTTP runs the seed's flows through serve: follow, publish (fan-out through
// the queue), unread counts and pages, like, mark read, mark all read; on the embedded
// defaults (SQLite + memory), on Redis, on PostgreSQL + Redis and on MariaDB + Redis.
func TestServe_FeedOverHTTP(t *testing.T) {
	for _, backend := range []string{"memory", "redis", "postgres+redis", "mysql+redis"} {
		t.Run(backend, func(t *testing.T) {
			var args []string
			if backend != "memory" {
				args = append(args, "--redis", redistest.StartStandalone(t).URL)
			}
			switch backend {
			case "postgres+redis":
				args = append(args, "--database", sqltest.PostgresDSN(t))
			case "mysql+redis":
				args = append(args, "--database", sqltest.MariaDBDSN(t))
			}
			base, logs, _, _ := startServe(t, args...)
			if !strings.Contains(logs.String(), `"msg":"feed ready"`) {
				t.Fatalf("no feed:\n%s", logs)
			}
			if engine, _, ok := strings.Cut(backend, "+"); ok && !strings.Contains(logs.String(), `"engine":"`+engine+`"`) {
				t.Fatalf("not on %s:\n%s", engine, logs)
			}
			if status, body := request(t, http.MethodPut, base+"/v1/feed/users/2001/following/1001", ""); status != http.StatusOK || !strings.Contains(body, `"changed":true`) {
				t.Fatalf("follow = %d %s", status, body)
			}
			var ids []int64
			for i := 0; i < 3; i++ {
				status, body := request(t, http.MethodPost, base+"/v1/feed/posts", `{"userId":1001,"title":"post","content":"c","images":["a.png"]}`)
				if status != http.StatusCreated {
					t.Fatalf("publish = %d %s", status, body)
				}
				var p struct {
					ID int64 `json:"id"`
				}
				_ = json.Unmarshal([]byte(body), &p)
				ids = append(ids, p.ID)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				_, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/unread-counts", "")
				if strings.Contains(body, `"total":3`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("fan-out never arrived: %s\n%s", body, logs)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if status, body := request(t, http.MethodPut, base+"/v1/feed/users/2001/likes/"+itoa(ids[2]), ""); status != http.StatusOK {
				t.Fatalf("like = %d %s", status, body)
			}
			status, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/authors/1001/posts?readStatus=UNREAD&size=2", "")
			if status != http.StatusOK || !strings.Contains(body, `"hasMore":true`) || !strings.Contains(body, `"isLike":true`) || !strings.Contains(body, `"liked":1`) {
				t.Fatalf("unread page = %d %s", status, body)
			}
			var page struct {
				Next string `json:"next"`
			}
			_ = json.Unmarshal([]byte(body), &page)
			if status, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/authors/1001/posts?readStatus=UNREAD&size=2&cursor="+page.Next, ""); status != http.StatusOK || strings.Contains(body, `"hasMore":true`) || !strings.Contains(body, `"id":`+itoa(ids[0])) {
				t.Fatalf("second page = %d %s", status, body)
			}
			if status, body := request(t, http.MethodPost, base+"/v1/feed/users/2001/read/"+itoa(ids[1]), ""); status != http.StatusNoContent {
				t.Fatalf("read = %d %s", status, body)
			}
			if _, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/unread-counts", ""); !strings.Contains(body, `"total":2`) {
				t.Fatalf("after read: %s", body)
			}
			if status, body := request(t, http.MethodPost, base+"/v1/feed/users/2001/authors/1001/read-all", ""); status != http.StatusOK || !strings.Contains(body, `"marked":2`) {
				t.Fatalf("read-all = %d %s", status, body)
			}
			if _, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/unread-counts", ""); !strings.Contains(body, `"total":0`) {
				t.Fatalf("after read-all: %s", body)
			}
			if status, body := request(t, http.MethodGet, base+"/v1/feed/users/2001/authors/1001/posts?readStatus=ALL&current=1&size=10", ""); status != http.StatusOK || strings.Count(body, `"title"`) != 3 {
				t.Fatalf("all = %d %s", status, body)
			}
			if status, body := request(t, http.MethodGet, base+"/v1/feed/users/x/unread-counts", ""); status != http.StatusBadRequest {
				t.Fatalf("bad viewer = %d %s", status, body)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestServe_FeedLiveCountsAcrossInstances: a client streaming user 2001's counts from one
// instance sees the counts change when a post is published and read through another instance
// sharing the same Redis and database.
func TestServe_FeedLiveCountsAcrossInstances(t *testing.T) {
	rds := redistest.StartStandalone(t)
	dir := t.TempDir()
	a, _, _, _ := startServe(t, "--redis", rds.URL, "--data-dir", dir)
	b, _, _, _ := startServe(t, "--redis", rds.URL, "--data-dir", dir)
	if status, body := request(t, http.MethodPut, a+"/v1/feed/users/2001/following/1001", ""); status != http.StatusOK {
		t.Fatalf("follow = %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b+"/v1/feed/users/2001/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- line
			}
		}
		close(events)
	}()
	next := func(want string) {
		t.Helper()
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("stream ended before %s", want)
				}
				if strings.Contains(e, want) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no counts event with %s", want)
			}
		}
	}
	next(`"total":0`)
	status, body := request(t, http.MethodPost, a+"/v1/feed/posts", `{"userId":1001,"title":"live"}`)
	if status != http.StatusCreated {
		t.Fatalf("publish = %d %s", status, body)
	}
	next(`"total":1`)
	var p struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &p)
	if status, body := request(t, http.MethodPost, a+"/v1/feed/users/2001/read/"+itoa(p.ID), ""); status != http.StatusNoContent {
		t.Fatalf("read = %d %s", status, body)
	}
	next(`"total":0`)
}

// TestFeedCommands_RebuildNeedsYesAndRepairsDrift: serve publishes to a follower on Redis; a
// count is broken behind the feed's back; `feed verify` reports it and exits 1; `feed rebuild`
// refuses without --yes and says what it would do, repairs with it; verify is clean after.
func TestFeedCommands_RebuildNeedsYesAndRepairsDrift(t *testing.T) {
	srv := redistest.StartStandalone(t)
	dir := t.TempDir()
	base, logs, stop, done := startServe(t, "--redis", srv.URL, "--data-dir", dir)
	if status, body := request(t, http.MethodPut, base+"/v1/feed/users/3001/following/1001", ""); status != http.StatusOK {
		t.Fatalf("follow = %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/feed/posts", `{"userId":1001,"title":"t"}`); status != http.StatusCreated {
		t.Fatalf("publish = %d %s", status, body)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, body := request(t, http.MethodGet, base+"/v1/feed/users/3001/unread-counts", ""); strings.Contains(body, `"total":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fan-out never arrived\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	rc := srv.Client(t)
	// An unread entry SQL does not have (a count of 2 where SQL says 1).
	if err := rc.ZAdd(t.Context(), "user:unread:v2:3001:1001", redis.Z{Score: 5, Member: "99"}).Err(); err != nil {
		t.Fatal(err)
	}
	// The author index holds the post at a wrong time and the cached post a wrong liked count
	// (drift a Redis outage can leave): verify reports both, rebuild repairs both.
	if err := rc.ZAdd(t.Context(), "author:blogs:1001", redis.Z{Score: 1, Member: "1"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.HSet(t.Context(), "blog:info:1", "liked", 5).Err(); err != nil {
		t.Fatal(err)
	}
	args := []string{"--redis", srv.URL, "--data-dir", dir}
	out, err := run(t, append([]string{"feed", "verify"}, args...)...)
	if err == nil || !strings.Contains(out, `"user":3001`) || !strings.Contains(out, `{"author":1001,"missing":[1],"stale":[1]}`) {
		t.Fatalf("feed verify on drift = %v:\n%s", err, out)
	}
	if _, err := run(t, append([]string{"feed", "rebuild"}, args...)...); err == nil || !strings.Contains(err.Error(), "every user who follows someone") || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("feed rebuild without --yes = %v", err)
	}
	if out, err := run(t, append([]string{"feed", "rebuild", "--yes"}, args...)...); err != nil || !strings.Contains(out, "rebuilt the unread state of 1 users") ||
		!strings.Contains(out, "rebuilt the index and post caches of 1 authors") {
		t.Fatalf("feed rebuild --yes = %v:\n%s", err, out)
	}
	if out, err := run(t, append([]string{"feed", "verify"}, args...)...); err != nil {
		t.Fatalf("feed verify after rebuild = %v:\n%s", err, out)
	}
	if liked, err := rc.HGet(t.Context(), "blog:info:1", "liked").Result(); err != nil || liked != "0" {
		t.Fatalf("cached liked after rebuild = %q, %v; want 0", liked, err)
	}
	if out, err := run(t, append([]string{"feed", "counts", "--user", "3001"}, args...)...); err != nil || !regexp.MustCompile(`(?m)^1001\s+1\s*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^total\s+1\s*$`).MatchString(out) {
		t.Fatalf("feed counts = %v:\n%s", err, out)
	}
	if out, err := run(t, append([]string{"feed", "counts", "--user", "3001", "--json"}, args...)...); err != nil || strings.TrimSpace(out) != `{"counts":{"1001":1},"total":1,"user":3001}` {
		t.Fatalf("feed counts --json = %v:\n%s", err, out)
	}
	if _, err := run(t, append([]string{"feed", "counts"}, args...)...); err == nil || !strings.Contains(err.Error(), "--user") {
		t.Fatalf("feed counts without --user = %v", err)
	}
}
