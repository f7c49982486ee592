//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/feed/sqlfeed"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// Feed load: the feed as serve wires it (SQLite truth, Redis cache behind the feed breaker,
// durable fan-out jobs on a queue and their worker, the repair loop). Every follower follows
// every author from the start of the run, so every post is unread for every follower until
// read. Per phase each of feedAuthors authors publishes a post every feedPublishPause,
// feedMarkers goroutines mark a random post acknowledged in the phase read for a random
// active follower every feedMarkPause, and one reader reads a random active follower's unread
// counts and first UNREAD page of a random author every feedReadPause. The other followers
// (lurkers) only receive fan-outs: a write that fails for an active follower marks the whole
// user for repair, which also heals what a failover lost of that user's state, so lurkers show
// what no later write of theirs repairs.
const (
	feedAuthors      = 3
	feedFollowers    = 8
	feedActive       = 4
	feedPublishPause = 50 * time.Millisecond
	feedMarkers      = 2
	feedMarkPause    = 10 * time.Millisecond
	feedReadPause    = 20 * time.Millisecond
	// feedDrain bounds how long settle waits for the fan-out queue to empty.
	feedDrain = 30 * time.Second
)

// feedBlock is the feed under load.
var feedBlock = block{name: "feed", setup: func(t *testing.T, r *run) func(int) load {
	f := newFeedRun(t, r)
	return func(phase int) load { return newFeedLoad(t, f, phase) }
}}

// feedRun is the feed of one run: built once, shared by the run's phases.
type feedRun struct {
	svc *feed.Service
	src *sqlfeed.Store
	// cache reads Redis directly (no breaker) for the checks.
	cache  *redisfeed.Cache
	broker *redisqueue.Broker
	// queue is the fan-out queue, named after a run tag (its keys live on the faulted shard):
	// tags[5] in mode wait1, tags[4] in the others. A job an earlier run of the topology left
	// (a retry) names a post of that run's database: here it fans out this run's post of that
	// id, as its own job does, or is dead-lettered (no such post); either is harmless.
	queue string
	mode  string
	log   *slog.Logger
	// authors and followers are the load's user ids; active are the first feedActive
	// followers, the ones who read and mark posts read.
	authors, followers, active []int64
}

// newFeedRun builds the feed on a fresh SQLite file and r.rdb (keys under "chaosfeed:<mode>:",
// so that the runs of one topology do not share state) and makes every follower follow every
// author.
func newFeedRun(t *testing.T, r *run) *feedRun {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "feed.db"))
	if err != nil {
		t.Fatalf("sqldb.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	src, err := sqlfeed.New(ctx, db)
	if err != nil {
		t.Fatalf("sqlfeed.New: %v", err)
	}
	broker, err := redisqueue.New(r.rdb, redisqueue.Options{})
	if err != nil {
		t.Fatalf("redisqueue.New: %v", err)
	}
	f := &feedRun{src: src, broker: broker, cache: redisfeed.New(r.rdb, redstate.Prefix("", "chaosfeed:"+r.mode+":")), mode: r.mode,
		queue: r.tags[4], log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	if r.mode == "wait1" {
		f.queue = r.tags[5]
	}
	enqueue, err := feed.FanOutEnqueuer(broker, f.queue)
	if err != nil {
		t.Fatalf("feed.FanOutEnqueuer: %v", err)
	}
	cfg := feed.DefaultConfig()
	prober := redisconn.NewProber(r.rdb, clientOptions(r.topo, r.mode).Durability)
	t.Cleanup(func() { _ = prober.Close() })
	br, err := resilience.NewBreaker(feed.Block, cfg.Resilience.Options(), nil, f.log, resilience.WithProbe(prober.Ping))
	if err != nil {
		t.Fatalf("resilience.NewBreaker: %v", err)
	}
	t.Cleanup(br.Close)
	f.svc, err = feed.NewService(src, f.cache, feed.Options{HybridThreshold: cfg.HybridThreshold, Logger: f.log,
		Breaker: br, RepairInterval: cfg.RepairInterval, Enqueue: enqueue})
	if err != nil {
		t.Fatalf("feed.NewService: %v", err)
	}
	ids := feedUserIDs(r, feedAuthors+feedFollowers)
	f.authors, f.followers = ids[:feedAuthors], ids[feedAuthors:]
	f.active = f.followers[:feedActive]
	for _, u := range f.followers {
		for _, a := range f.authors {
			if _, err := f.svc.Follow(ctx, u, a); err != nil {
				t.Fatalf("follow %d → %d: %v", u, a, err)
			}
		}
	}
	return f
}

// feedUserIDs returns n user ids; on Cluster only ids whose user keys ("{id}" hash tag) hash
// into the slots of the run's tags, so that the faults hit every follower's state.
func feedUserIDs(r *run, n int) []int64 {
	lo, hi := keyspace.Slot("{"+r.tags[0]+"}"), 0
	for _, tag := range r.tags {
		s := keyspace.Slot("{" + tag + "}")
		lo, hi = min(lo, s), max(hi, s)
	}
	var ids []int64
	for id := int64(1); len(ids) < n; id++ {
		s := keyspace.Slot("{" + strconv.FormatInt(id, 10) + "}")
		if r.topo.name() != "cluster" || (s >= lo && s <= hi) {
			ids = append(ids, id)
		}
	}
	return ids
}

// newWorker returns the fan-out queue's worker for phase, as serve configures it (product
// defaults) under a consumer id of its own.
func (f *feedRun) newWorker(t *testing.T, phase int) *queue.Worker {
	t.Helper()
	w, err := queue.NewWorker(f.broker, feed.FanOutHandler(f.svc), queue.WorkerSettings{Queue: f.queue,
		ConsumerID: fmt.Sprintf("chaosfeed-%s-p%d", f.mode, phase), Concurrency: feed.DefaultFanOutConcurrency,
		Logger: f.log, Check: feed.CheckFanOutJob})
	if err != nil {
		t.Fatalf("queue.NewWorker: %v", err)
	}
	return w
}

// feedLoad is the feed load model of one phase: the posts whose Publish and the (follower,
// post) pairs whose MarkRead were acknowledged, and the outcome of every read.
type feedLoad struct {
	f      *feedRun
	worker *queue.Worker
	// pubLog, markLog and readLog are the outcomes of Publish, MarkRead and the reads.
	pubLog, markLog, readLog opLog

	mu    sync.Mutex
	posts []feed.Post
	marks map[feedMark]bool
}

// feedMark is an acknowledged MarkRead: user read post.
type feedMark struct{ user, post int64 }

// newFeedLoad returns the load of phase on f, with the phase's fan-out worker.
func newFeedLoad(t *testing.T, f *feedRun, phase int) *feedLoad {
	return &feedLoad{f: f, worker: f.newWorker(t, phase), marks: map[feedMark]bool{}}
}

// start runs the publishers, markers and reader on produce, and the fan-out worker and the
// repair loop (serve's background work) on work.
func (l *feedLoad) start(produce, work context.Context, producers, workers *sync.WaitGroup) {
	for _, a := range l.f.authors {
		producers.Add(1)
		go func() {
			defer producers.Done()
			l.publish(produce, a)
		}()
	}
	for range feedMarkers {
		producers.Add(1)
		go func() {
			defer producers.Done()
			l.markRead(produce)
		}()
	}
	producers.Add(1)
	go func() {
		defer producers.Done()
		l.read(produce)
	}()
	workers.Add(2)
	go func() {
		defer workers.Done()
		_ = l.worker.Run(work)
	}()
	go func() {
		defer workers.Done()
		_ = l.f.svc.Run(work)
	}()
}

// publish publishes posts of author until ctx ends.
func (l *feedLoad) publish(ctx context.Context, author int64) {
	for i := 0; ctx.Err() == nil; i++ {
		opCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		p, err := l.f.svc.Publish(opCtx, feed.Post{AuthorID: author, Title: fmt.Sprintf("chaos %d/%d", author, i)})
		cancel()
		if ctx.Err() != nil {
			return // outcome unknown
		}
		l.pubLog.add(err)
		if err == nil {
			l.mu.Lock()
			l.posts = append(l.posts, p)
			l.mu.Unlock()
		}
		time.Sleep(feedPublishPause)
	}
}

// markRead marks a random acknowledged post read for a random active follower until ctx ends.
func (l *feedLoad) markRead(ctx context.Context) {
	for ctx.Err() == nil {
		l.mu.Lock()
		n := len(l.posts)
		var post int64
		if n > 0 {
			post = l.posts[rand.IntN(n)].ID
		}
		l.mu.Unlock()
		if n == 0 {
			time.Sleep(feedMarkPause)
			continue
		}
		user := l.f.active[rand.IntN(len(l.f.active))]
		opCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := l.f.svc.MarkRead(opCtx, user, post)
		cancel()
		if ctx.Err() != nil {
			return // outcome unknown
		}
		l.markLog.add(err)
		if err == nil {
			l.mu.Lock()
			l.marks[feedMark{user, post}] = true
			l.mu.Unlock()
		}
		time.Sleep(feedMarkPause)
	}
}

// read reads a random active follower's unread counts and first UNREAD page of a random author until
// ctx ends: a read that fails (the feed answers from SQL when Redis does not) is a failed op.
func (l *feedLoad) read(ctx context.Context) {
	for ctx.Err() == nil {
		user := l.f.active[rand.IntN(len(l.f.active))]
		author := l.f.authors[rand.IntN(len(l.f.authors))]
		opCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := l.f.svc.UnreadCounts(opCtx, user)
		if err == nil {
			_, err = l.f.svc.QueryPage(opCtx, user, author, feed.StatusUnread, feed.Cursor{}, 10)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		l.readLog.add(err)
		time.Sleep(feedReadPause)
	}
}
