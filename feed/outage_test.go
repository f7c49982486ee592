package feed_test

import (
	"context"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// outageEnv is a feed on SQLite and a real redis-server (AOF, fsync always) that the test kills
// and restarts.
type outageEnv struct {
	rds    *redistest.Server
	client redis.UniversalClient
	src    *sqlfeed.Store
	cache  *redisfeed.Cache
	opts   feed.Options
}

func newOutageEnv(t *testing.T, opts feed.Options) *outageEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("real redis-server: not under -short")
	}
	rds := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	rc := redisconn.DefaultOptions()
	rc.URL = rds.URL
	client, err := redisconn.New(rc) // the client serve uses (its retries and timeouts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	src, err := sqlfeed.New(context.Background(), sqltest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	return &outageEnv{rds: rds, client: client, src: src, cache: redisfeed.New(client, redstate.Prefix("", feedtest.UniquePrefix())), opts: opts}
}

// service returns a new Service on the env: a new one stands for a restarted process.
func (e *outageEnv) service(t *testing.T) *feed.Service {
	t.Helper()
	svc, err := feed.NewService(e.src, e.cache, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// repair runs RepairOnce of a fresh Service (a process started after the outage) until it
// succeeds.
func (e *outageEnv) repair(t *testing.T) {
	t.Helper()
	svc := e.service(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := svc.RepairOnce(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("repair did not succeed after Redis returned: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mustNoDrift fails unless every user's and author's Redis state equals SQL.
func mustNoDrift(t *testing.T, svc *feed.Service, users, authors []int64) {
	t.Helper()
	ctx := context.Background()
	for _, u := range users {
		d, err := svc.VerifyUser(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(d) > 0 {
			t.Errorf("user %d drifted: %+v", u, d)
		}
	}
	for _, a := range authors {
		d, err := svc.VerifyAuthor(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if d != nil {
			t.Errorf("author %d drifted: %+v", a, *d)
		}
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestOutage_PostsPublishedWhileRedisDownReachAuthorIndex: posts published while Redis is down are
// in the author's Redis index (and so in ALL pages and a hybrid author's unread) once a process
// repairs after Redis returned, also a process other than the one that accepted them (the marks are
// in SQL).
func TestOutage_PostsPublishedWhileRedisDownReachAuthorIndex(t *testing.T) {
	e := newOutageEnv(t, feed.Options{HybridThreshold: 1}) // 1 follower: fan-out; 2: hybrid
	ctx := context.Background()
	svc := e.service(t)
	const fan, big, u1, u2 = 101, 102, 201, 202
	must[bool](t)(svc.Follow(ctx, u1, fan))
	must[bool](t)(svc.Follow(ctx, u1, big))
	must[bool](t)(svc.Follow(ctx, u2, big))
	for _, a := range []int64{fan, big} {
		must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: a, Title: "before"}))
		must[feed.Page](t)(svc.QueryPage(ctx, u1, a, feed.StatusAll, feed.Cursor{}, 10)) // builds the index
	}
	if _, _, err := svc.UnreadCounts(ctx, u1); err != nil { // builds u1's state
		t.Fatal(err)
	}

	e.rds.Kill(t)
	var during []int64
	for _, a := range []int64{fan, big, fan, big} {
		p := must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: a, Title: "during"}))
		during = append(during, p.ID)
	}
	e.rds.Restart(t)
	e.repair(t)

	for i, a := range []int64{fan, big, fan, big} {
		refs := must[[]feed.PostRef](t)(e.cache.AuthorPage(ctx, a, feed.Cursor{}, 100))
		if !slices.ContainsFunc(refs, func(r feed.PostRef) bool { return r.ID == during[i] }) {
			t.Errorf("post %d of author %d published during the outage is not in the Redis index %v", during[i], a, refs)
		}
	}
	c, _, err := e.cache.HybridUnread(ctx, u2, big, time.Time{}, feed.Cursor{}, 0)
	if err != nil || c != 3 {
		t.Errorf("hybrid unread of user %d = %d, %v; want 3 (1 before, 2 during the outage)", u2, c, err)
	}
	mustNoDrift(t, svc, []int64{u1, u2}, []int64{fan, big})
}

// TestOutage_UnfollowRefollowLeavesNoOldUnread: an unfollow and a new follow while Redis is down
// leave no unread post from before the new follow once Redis returned and a process repaired,
// without `feed rebuild`; reads and likes during the outage are repaired too.
func TestOutage_UnfollowRefollowLeavesNoOldUnread(t *testing.T) {
	e := newOutageEnv(t, feed.Options{})
	ctx := context.Background()
	svc := e.service(t)
	const a, b, u = 111, 112, 211
	must[bool](t)(svc.Follow(ctx, u, a))
	must[bool](t)(svc.Follow(ctx, u, b))
	var bPosts []int64
	for range 9 {
		must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: a, Title: "old"}))
		bPosts = append(bPosts, must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: b, Title: "b"})).ID)
	}
	if _, total, err := svc.UnreadCounts(ctx, u); err != nil || total != 18 {
		t.Fatalf("before the outage: total %d, %v", total, err)
	}

	e.rds.Kill(t)
	must[bool](t)(svc.Unfollow(ctx, u, a))
	time.Sleep(2 * time.Millisecond)
	must[bool](t)(svc.Follow(ctx, u, a))
	if err := svc.MarkRead(ctx, u, bPosts[0]); err != nil {
		t.Fatal(err)
	}
	must[bool](t)(svc.Like(ctx, u, bPosts[1], true))
	e.rds.Restart(t)
	e.repair(t)

	counts := must[map[int64]int64](t)(e.cache.UnreadCounts(ctx, u, []int64{a, b}))
	if counts[a] != 0 || counts[b] != 8 {
		t.Errorf("Redis counts after the repair = %v, want none of %d and 8 of %d", counts, a, b)
	}
	if refs := must[[]feed.PostRef](t)(e.cache.UnreadPage(ctx, u, a, feed.Cursor{}, 100)); len(refs) != 0 {
		t.Errorf("Redis still lists %d unread posts of %d from before the new follow", len(refs), a)
	}
	mustNoDrift(t, svc, []int64{u}, []int64{a, b})
}

// TestLikes_ConcurrentBurstsKeepCachedLikedExact: eight users liking one post at once, with readers
// refilling the cache meanwhile, never leave a cached liked count that differs from SQL once the
// burst is over.
func TestLikes_ConcurrentBurstsKeepCachedLikedExact(t *testing.T) {
	e := newOutageEnv(t, feed.Options{})
	ctx := context.Background()
	svc := e.service(t)
	const author, reader = 121, 221
	stale := 0
	const bursts = 40
	for i := range bursts {
		p := must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: author, Title: "hot"}))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for j := range 8 {
			wg.Go(func() {
				<-start
				if _, err := svc.Like(ctx, int64(1000+j), p.ID, true); err != nil {
					t.Error(err)
				}
			})
			wg.Go(func() {
				<-start
				if _, err := svc.QueryPage(ctx, reader, author, feed.StatusAll, feed.Cursor{}, 1); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		cached := must[map[int64]feed.Post](t)(e.cache.GetPosts(ctx, []int64{p.ID}))
		if c, ok := cached[p.ID]; ok && c.Liked != 8 {
			stale++
			t.Logf("burst %d: cached liked %d, SQL 8", i, c.Liked)
		}
	}
	if stale > 0 {
		t.Errorf("%d of %d bursts left a stale cached liked count", stale, bursts)
	}
}

// TestLikes_OutageAndRebuildRepairPostCache: a like while Redis is down does not leave the old
// cached count once Redis returned and a process repaired; a cached copy that drifted otherwise is
// reported by VerifyAuthor and rewritten by RebuildAuthor.
func TestLikes_OutageAndRebuildRepairPostCache(t *testing.T) {
	e := newOutageEnv(t, feed.Options{})
	ctx := context.Background()
	svc := e.service(t)
	const author = 131
	p := must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: author, Title: "p"}))
	must[feed.Page](t)(svc.QueryPage(ctx, 231, author, feed.StatusAll, feed.Cursor{}, 10)) // cached
	if got := must[map[int64]feed.Post](t)(e.cache.GetPosts(ctx, []int64{p.ID})); got[p.ID].Liked != 0 {
		t.Fatalf("cached before: %+v", got)
	}
	e.rds.Kill(t)
	must[bool](t)(svc.Like(ctx, 231, p.ID, true))
	e.rds.Restart(t)
	e.repair(t)
	if got := must[map[int64]feed.Post](t)(e.cache.GetPosts(ctx, []int64{p.ID})); got[p.ID].Liked != 1 && len(got) != 0 {
		t.Errorf("cached liked after the outage = %d, SQL 1", got[p.ID].Liked)
	}
	mustNoDrift(t, svc, nil, []int64{author})

	// A copy that drifted (written by something else): verify reports it, rebuild rewrites it.
	if err := e.client.HSet(ctx, e.cache.Keys().Post(p.ID), "liked", 99).Err(); err != nil {
		t.Fatal(err)
	}
	d := must[*feed.AuthorDrift](t)(svc.VerifyAuthor(ctx, author))
	if d == nil || !slices.Equal(d.Stale, []int64{p.ID}) {
		t.Fatalf("VerifyAuthor = %+v, want post %d stale", d, p.ID)
	}
	if err := svc.RebuildAuthor(ctx, author); err != nil {
		t.Fatal(err)
	}
	if got := must[map[int64]feed.Post](t)(e.cache.GetPosts(ctx, []int64{p.ID})); got[p.ID].Liked != 1 {
		t.Errorf("cached after rebuild = %+v, want liked 1", got[p.ID])
	}
	mustNoDrift(t, svc, nil, []int64{author})
}

// TestVerifyAndRebuild_AuthorIndexDrift: an author index that lacks a post SQL has is reported by
// VerifyAuthor and repaired by RebuildAuthor.
func TestVerifyAndRebuild_AuthorIndexDrift(t *testing.T) {
	e := newOutageEnv(t, feed.Options{})
	ctx := context.Background()
	svc := e.service(t)
	const author = 141
	var ids []int64
	for range 3 {
		ids = append(ids, must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: author, Title: "p"})).ID)
	}
	if err := e.client.ZRem(ctx, e.cache.Keys().AuthorPosts(author), strconv.FormatInt(ids[1], 10)).Err(); err != nil {
		t.Fatal(err)
	}
	d := must[*feed.AuthorDrift](t)(svc.VerifyAuthor(ctx, author))
	if d == nil || !slices.Equal(d.Missing, []int64{ids[1]}) {
		t.Fatalf("VerifyAuthor = %+v, want post %d missing", d, ids[1])
	}
	if err := svc.RebuildAuthor(ctx, author); err != nil {
		t.Fatal(err)
	}
	mustNoDrift(t, svc, nil, []int64{author})
}

// TestBreaker_DegradedReadsAreFast: while Redis is down, once the breaker opened, reads are
// answered from SQL without waiting for Redis; Run's probe closes the breaker again after Redis
// returned and repairs what was missed.
func TestBreaker_DegradedReadsAreFast(t *testing.T) {
	br, err := resilience.NewBreaker(feed.Block, resilience.BreakerConfig{WaitDurationInOpenState: 300 * time.Millisecond}.Options(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newOutageEnv(t, feed.Options{Breaker: br, RepairInterval: 100 * time.Millisecond})
	ctx := context.Background()
	svc := e.service(t)
	const author, u = 151, 251
	must[bool](t)(svc.Follow(ctx, u, author))
	for range 5 {
		must[feed.Post](t)(svc.Publish(ctx, feed.Post{AuthorID: author, Title: "p"}))
	}
	read := func() time.Duration {
		start := time.Now()
		page := must[feed.Page](t)(svc.QueryPage(ctx, u, author, feed.StatusUnread, feed.Cursor{}, 10))
		if _, total, err := svc.UnreadCounts(ctx, u); err != nil || total != 5 || len(page.Posts) != 5 {
			t.Fatalf("degraded read: %d posts, total %d, %v", len(page.Posts), total, err)
		}
		return time.Since(start)
	}
	read()
	e.rds.Kill(t)
	for range 10 { // open it
		read()
	}
	if br.State() != "open" {
		t.Fatalf("breaker %s after 10 failing reads, want open", br.State())
	}
	calls := &callCounter{}
	e.client.AddHook(calls)
	var lat []time.Duration
	for range 50 {
		lat = append(lat, read())
	}
	if n := calls.n.Load(); n != 0 {
		t.Errorf("reads with the breaker open made %d Redis calls or dials, want none", n)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p95 := lat[len(lat)*95/100]
	t.Logf("degraded reads (page + counts) with the breaker open: p50 %s, p95 %s, max %s", lat[len(lat)/2], p95, lat[len(lat)-1])
	// Without the breaker each of these reads waits for go-redis to fail (p50 ≈ 63 ms against a
	// refused port here, ≈ 450 ms measured under load); with it they touch no Redis (above)
	// and take SQL's time (≈ 0.5 ms, ≈ 10 ms under -race): the bound is generous for a loaded
	// machine, far under the 2 s dial timeout.
	if p95 > 250*time.Millisecond {
		t.Errorf("degraded reads p95 %s: want SQL speed (well under the Redis dial timeout)", p95)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(runCtx) }()
	defer func() { stop(); <-done }()
	if err := svc.MarkRead(ctx, u, must[feed.Page](t)(svc.QueryPage(ctx, u, author, feed.StatusUnread, feed.Cursor{}, 1)).Posts[0].ID); err != nil {
		t.Fatal(err)
	}
	e.rds.Restart(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		counts, err := e.cache.UnreadCounts(ctx, u, []int64{author})
		if br.State() == "closed" && err == nil && counts[author] == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("breaker %s, Redis counts %v (%v) 20 s after Redis returned; want closed and 4", br.State(), counts, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustNoDrift(t, svc, []int64{u}, []int64{author})
	if calls.n.Load() == 0 {
		t.Error("the call counter saw no Redis call after Redis returned: it counts nothing")
	}
}

// callCounter is a go-redis hook counting dials, commands and pipelines.
type callCounter struct{ n atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.n.Add(1)
		return next(ctx, network, addr)
	}
}

func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}
