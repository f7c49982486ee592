// Package feedbench benchmarks the feed's Redis side (feed/redisfeed) against raw go-redis
// commands of the same shape on the same client in the same run:
//
//	fanout  FanOut of a post to N followers (one script per group of 100 followers: per
//	        follower one ZADD NX of the post and the set's marker, a PEXPIREAT when that created
//	        the set, and for the call's next new sets one RESTORE of a copy of the first;
//	        pipelined per batch) vs pipelined SADD + HINCRBY of the same key shapes
//	        (the seed's algorithm, no guard), followers/s, the two taking turns on ten slices of
//	        the followers; twice: the first post creates the followers' keys (fanout_first), the
//	        second finds them (fanout)
//	read    MarkRead (one script: ZADD XX CH of the post to -inf in the unread set) vs a
//	        pipelined SADD + SREM + HINCRBY, ops/s and p99
//	page    UnreadPage of 20 (one ZREVRANGEBYSCORE WITHSCORES) vs ZREVRANGE 0 19, ops/s and p99
//	page_cached  the same page through the client-side cache (Target.Cache) vs ZREVRANGE 0 19
//
// Every line but page_cached also gives what each side cost per follower or operation, read
// around its own turns or slices (bench.SideCost): the server's CPU time (INFO cpu), its time
// inside the calls (INFO commandstats) and the bench process's CPU time; and a line per side
// lists the commands the server ran.
//
// It also prints the Redis memory per unread entry (MEMORY USAGE of an unread set over the
// entries it holds; the count is the set's size).
package feedbench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/redisconn"
)

// Options configure a run. Zero values take the defaults noted.
type Options struct {
	// Target is the Redis client, the concurrent pipelines / callers (default 8) and the
	// progress writer.
	bench.Target
	// Followers is the fan-out size (default 1,000,000).
	Followers int
	// Batch is the followers per pipeline (default 1,000).
	Batch int
	// Duration is the measured time of read and page per implementation (default 5s).
	Duration time.Duration
}

// Result is the outcome of a run.
type Result struct {
	// FanOut: followers/s of ours and of the baseline, and ours' wall time, for a post to
	// followers who already hold unread state of the author (the second post).
	FanOutOurs, FanOutBaseline float64
	FanOutTime                 time.Duration
	// First: the same for the first post, which creates every follower's keys.
	FirstOurs, FirstBaseline float64
	FirstTime                time.Duration
	// FanOutCost and FirstCost are the costs of ours and of the baseline over their turns.
	FanOutCost, FirstCost [2]bench.SideCost
	// Read and Page are the timed comparisons; ReadCost and PageCost their costs (ours, then
	// the baseline).
	Read, Page         bench.Comparison
	ReadCost, PageCost [2]bench.SideCost
	// PageCached is Page through the client-side cache (nil without Target.Cache).
	PageCached *bench.Comparison
	// BytesPerEntry is Redis memory per unread entry (unread set + count field).
	BytesPerEntry float64
	// Followers is the fan-out size.
	Followers int64
}

// Lines returns the RESULT lines.
func (r Result) Lines() []string {
	ratio := func(ours, base float64) float64 {
		if base > 0 {
			return ours / base
		}
		return 0
	}
	lines := []string{
		fmt.Sprintf("RESULT feed.fanout ours=%.0f baseline=%.0f ratio=%.2f seconds=%.2f", r.FanOutOurs, r.FanOutBaseline, ratio(r.FanOutOurs, r.FanOutBaseline), r.FanOutTime.Seconds()) +
			costFields(r.FanOutCost, r.Followers, r.Followers),
		fmt.Sprintf("RESULT feed.fanout_first ours=%.0f baseline=%.0f ratio=%.2f seconds=%.2f", r.FirstOurs, r.FirstBaseline, ratio(r.FirstOurs, r.FirstBaseline), r.FirstTime.Seconds()) +
			costFields(r.FirstCost, r.Followers, r.Followers),
		bench.ResultLine(r.Read) + costFields(r.ReadCost, r.Read.Ours.Ops, r.Read.Baseline.Ops),
		bench.ResultLine(r.Page) + costFields(r.PageCost, r.Page.Ours.Ops, r.Page.Baseline.Ops),
	}
	if r.PageCached != nil {
		lines = append(lines, bench.ResultLine(*r.PageCached))
	}
	lines = append(lines, fmt.Sprintf("RESULT feed.memory bytes_per_unread_entry=%.0f", r.BytesPerEntry))
	for _, c := range []struct {
		name       string
		cost       [2]bench.SideCost
		ours, base int64
	}{
		{"feed.fanout", r.FanOutCost, r.Followers, r.Followers},
		{"feed.fanout_first", r.FirstCost, r.Followers, r.Followers},
		{"feed.read", r.ReadCost, r.Read.Ours.Ops, r.Read.Baseline.Ops},
		{"feed.page", r.PageCost, r.Page.Ours.Ops, r.Page.Baseline.Ops},
	} {
		lines = append(lines, "# "+c.name+" ours: "+c.cost[0].CommandList(c.ours), "# "+c.name+" raw: "+c.cost[1].CommandList(c.base))
	}
	return lines
}

// costFields formats the costs of ours (cost[0], over ours operations) and of the baseline
// (cost[1], over base operations) as
// " server_us=… baseline_server_us=… cmd_us=… baseline_cmd_us=… client_us=… baseline_client_us=…":
// µs per follower or operation of server CPU, of server time inside the calls and of the
// bench process's CPU.
func costFields(cost [2]bench.SideCost, ours, base int64) string {
	return fmt.Sprintf(" server_us=%.2f baseline_server_us=%.2f cmd_us=%.2f baseline_cmd_us=%.2f client_us=%.2f baseline_client_us=%.2f",
		cost[0].CPUPer(ours), cost[1].CPUPer(base), cost[0].CommandsPer(ours), cost[1].CommandsPer(base),
		cost[0].ClientCPUPer(ours), cost[1].ClientCPUPer(base))
}

// Print implements bench.Printer: the table of read and page, then the RESULT lines.
func (r Result) Print(w io.Writer) error {
	cs := []bench.Comparison{r.Read, r.Page}
	if r.PageCached != nil {
		cs = append(cs, *r.PageCached)
	}
	if err := bench.PrintTable(w, cs); err != nil {
		return err
	}
	return bench.PrintLines(w, r.Lines())
}

// Run measures and removes its keys.
func Run(ctx context.Context, opts Options) (Result, error) {
	var res Result
	if err := opts.Prepare("feedbench", 8); err != nil {
		return res, err
	}
	bench.Default(&opts.Followers, 1000000)
	bench.Default(&opts.Batch, 1000)
	bench.Default(&opts.Duration, 5*time.Second)
	prefix := bench.Namespace() + ":"
	defer opts.Cleanup(ctx, prefix, 5*time.Minute)
	ours := redisfeed.New(opts.Client, redstate.Prefix("", prefix+"ours:"))
	base := feed.NewKeys(redstate.Prefix("", prefix+"raw:"), redisconn.IsCluster(opts.Client))
	// baseCounts is the seed's counts hash of user u for the baseline.
	baseCounts := func(u int64) string { return prefix + "raw:user:unread:count:" + strconv.FormatInt(u, 10) }
	const author = int64(1)
	ref := feed.PostRef{ID: 42, CreateTime: time.Now()}

	// Two posts in a row to the same followers: the first creates every follower's keys (ours:
	// the unread set, the count field and their TTLs; the baseline: its set and field), the second
	// finds them (the common case: followers of an author who posts often hold unread posts of
	// the author).
	res.Followers = int64(opts.Followers)
	for i, w := range []struct {
		name string
		ref  feed.PostRef
		ours *float64
		base *float64
		took *time.Duration
		cost *[2]bench.SideCost
	}{
		{"fanout (first entry)", ref, &res.FirstOurs, &res.FirstBaseline, &res.FirstTime, &res.FirstCost},
		{"fanout", feed.PostRef{ID: ref.ID + 1, CreateTime: ref.CreateTime.Add(time.Second)}, &res.FanOutOurs, &res.FanOutBaseline, &res.FanOutTime, &res.FanOutCost},
	} {
		opts.Progressf("%s: post %d of 2 to %d followers, %d concurrent pipelines of %d, ours and baseline alternating per slice of %d\n",
			w.name, i+1, opts.Followers, opts.Clients, opts.Batch, (opts.Followers+fanOutSlices-1)/fanOutSlices)
		var added atomic.Int64
		runOurs := func(lo, hi int) error {
			return batches(opts, lo, hi, func(followers []int64) error {
				n, err := ours.FanOut(ctx, author, w.ref, followers)
				added.Add(int64(n))
				return err
			})
		}
		runBase := func(lo, hi int) error {
			return batches(opts, lo, hi, func(followers []int64) error {
				_, err := opts.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, u := range followers {
						p.SAdd(ctx, base.Unread(u, author), w.ref.ID)
						p.HIncrBy(ctx, baseCounts(u), strconv.FormatInt(author, 10), 1)
					}
					return nil
				})
				return err
			})
		}
		// Ours and the baseline take turns on slices of the followers (the one going first
		// alternating), so that both see the same load of a shared machine.
		var oursTook, baseTook time.Duration
		for sl := range fanOutSlices {
			lo, hi := sl*opts.Followers/fanOutSlices, (sl+1)*opts.Followers/fanOutSlices
			order := []string{"ours", "baseline"}
			if sl%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, impl := range order {
				run, took, cost := runOurs, &oursTook, &w.cost[0]
				if impl == "baseline" {
					run, took, cost = runBase, &baseTook, &w.cost[1]
				}
				var err error
				if rerr := cost.Measure(ctx, opts.Client, func() {
					start := time.Now()
					err = run(lo, hi)
					*took += time.Since(start)
				}); rerr != nil {
					return res, fmt.Errorf("%s: reading the server's cost: %w", w.name, rerr)
				}
				if err != nil {
					return res, fmt.Errorf("%s %s: %w", w.name, impl, err)
				}
			}
		}
		if added.Load() != int64(opts.Followers) {
			return res, fmt.Errorf("%s ours: %d unread sets changed, want %d", w.name, added.Load(), opts.Followers)
		}
		*w.took = oursTook
		*w.ours = float64(opts.Followers) / oursTook.Seconds()
		*w.base = float64(opts.Followers) / baseTook.Seconds()
		opts.Progressf("%s: ours %.0f/s (%s), baseline %.0f/s\n", w.name, *w.ours, w.took.Round(time.Millisecond), *w.base)
	}

	// Memory: one follower's unread set after 21 posts, per entry (the count is the set's size).
	for i := int64(0); i < 20; i++ {
		if _, err := ours.FanOut(ctx, author, feed.PostRef{ID: 1000 + i, CreateTime: time.Now()}, []int64{1}); err != nil {
			return res, err
		}
	}
	keys := ours.Keys()
	u1, _ := opts.Client.MemoryUsage(ctx, keys.Unread(1, author)).Result()
	res.BytesPerEntry = float64(u1) / 21

	// Read and page on followers that have unread entries: each op uses its own follower.
	rngs := make([]*rand.Rand, opts.Clients)
	for c := range rngs {
		rngs[c] = rand.New(rand.NewPCG(uint64(c)+3, 5))
	}
	pick := func(c int) int64 { return 2 + rngs[c].Int64N(int64(opts.Followers-1)) }
	cfg := opts.Config(opts.Duration)
	readOurs := func(ctx context.Context, c int, _ int64) error {
		_, err := ours.MarkRead(ctx, pick(c), author, ref.ID)
		return err
	}
	readRaw := func(ctx context.Context, c int, _ int64) error {
		u := pick(c)
		_, err := opts.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, base.Read(u), ref.ID)
			p.SRem(ctx, base.Unread(u, author), ref.ID)
			p.HIncrBy(ctx, baseCounts(u), strconv.FormatInt(author, 10), -1)
			return nil
		})
		return err
	}
	o, b, oc, bc, err := bench.RunPairCosted(ctx, opts.Target, "read/ours", "read/raw", cfg, readOurs, readRaw)
	if err != nil {
		return res, err
	}
	res.Read, res.ReadCost = bench.Comparison{Name: "feed.read", Ours: o, Baseline: b}, [2]bench.SideCost{oc, bc}
	// Pages of a follower with 21 unread posts.
	pageOurs := func(ctx context.Context, _ int, _ int64) error {
		_, err := ours.UnreadPage(ctx, 1, author, feed.Cursor{}, 20)
		return err
	}
	rawKey := keys.Unread(1, author)
	pageRaw := func(ctx context.Context, _ int, _ int64) error {
		return opts.Client.ZRevRange(ctx, rawKey, 0, 19).Err()
	}
	o, b, oc, bc, err = bench.RunPairCosted(ctx, opts.Target, "page/ours", "page/raw", cfg, pageOurs, pageRaw)
	if err != nil {
		return res, err
	}
	res.Page, res.PageCost = bench.Comparison{Name: "feed.page", Ours: o, Baseline: b}, [2]bench.SideCost{oc, bc}
	if err := bench.Failed(res.Read.Ours, res.Read.Baseline, res.Page.Ours, res.Page.Baseline); err != nil || opts.Cache == nil {
		return res, err
	}
	cached := redisfeed.NewCached(opts.Client, redstate.Prefix("", prefix+"ours:"), opts.Cache)
	pageCached := func(ctx context.Context, _ int, _ int64) error {
		_, err := cached.UnreadPage(ctx, 1, author, feed.Cursor{}, 20)
		return err
	}
	o, b = bench.RunPair(ctx, "page_cached/ours", "page_cached/raw", cfg, pageCached, pageRaw)
	res.PageCached = &bench.Comparison{Name: "feed.page_cached", Ours: o, Baseline: b}
	return res, bench.Failed(o, b)
}

// fanOutSlices is how many turns ours and the baseline take on the fan-out's followers.
const fanOutSlices = 10

// batches calls f for every batch of follower ids lo+2..hi+1, Clients at a time.
func batches(opts Options, lo, hi int, f func([]int64) error) error {
	next := make(chan []int64)
	errs := make(chan error, opts.Clients)
	var wg sync.WaitGroup
	for range opts.Clients {
		wg.Go(func() {
			for b := range next {
				if err := f(b); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for from := lo; from < hi; from += opts.Batch {
		b := make([]int64, 0, opts.Batch)
		for u := from; u < min(from+opts.Batch, hi); u++ {
			b = append(b, int64(u)+2)
		}
		select {
		case next <- b:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
