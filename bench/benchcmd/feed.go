package benchcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/feedbench"
)

func newBenchFeedCommand() *cobra.Command {
	var opts feedbench.Options
	cmd := benchCommand(&cobra.Command{
		Use:   "feed",
		Short: "Benchmark the feed's fan-out, mark-read and unread page against raw commands",
		Long: `On the same go-redis client:

  fanout  two posts in a row to --followers followers: FanOut (one script per group of 100
          followers, one ZADD NX per follower, pipelined in batches of --batch, --clients at
          a time) vs pipelined SADD + HINCRBY of the same keys, taking turns on ten slices of
          the followers; the first post creates the followers' keys (fanout_first), the
          second finds them (fanout)
  read    MarkRead (one script) vs pipelined SADD + SREM + HINCRBY
  page    an unread page of 20 (one ZREVRANGEBYSCORE, the cursor script when a group of
          equal times is cut) vs ZREVRANGE 0 19
  page_cached  the same page through the client-side cache (on unless --client-cache=false)
          vs ZREVRANGE 0 19

stdout gets a table, then:

  RESULT feed.fanout ours=<followers/s> baseline=<followers/s> ratio=<x> seconds=<ours> server_us=… baseline_server_us=… cmd_us=… baseline_cmd_us=… client_us=… baseline_client_us=…
  RESULT feed.fanout_first …
  RESULT feed.read ours=<ops/s> baseline=<ops/s> ratio=<x> p99_ms=… baseline_p99_ms=… server_us=… …
  RESULT feed.page …
  RESULT feed.page_cached …
  RESULT feed.memory bytes_per_unread_entry=<n>
  # feed.fanout ours: evalsha <calls per follower>×<µs per call>, zadd …, …
  # feed.fanout raw: …

server_us is the Redis server's CPU time (INFO cpu) per follower or operation over the side's
own turns or slices, cmd_us its time inside the calls (INFO commandstats), client_us the
bench process's CPU time (getrusage); the # lines list the commands each side made the server
run.

The bench's keys are removed at the end.`,
	}, &opts.Target, func(ctx context.Context) (bench.Printer, error) {
		res, err := feedbench.Run(ctx, opts)
		if err != nil {
			return nil, err
		}
		return res, nil
	})
	f := cmd.Flags()
	f.IntVar(&opts.Followers, "followers", 1000000, "followers of the fanned-out post")
	f.IntVar(&opts.Batch, "batch", 1000, "followers per pipeline")
	f.IntVar(&opts.Clients, "clients", 8, "concurrent pipelines and callers")
	f.DurationVar(&opts.Duration, "duration", 5*time.Second, "measured time of read and page per implementation")
	return cmd
}
