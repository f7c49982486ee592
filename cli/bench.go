package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/buildstatusbench"
	"github.com/redstate/redstate/config"
)

// NewBenchCommand returns `redstate bench`, whose subcommands benchmark a block's Redis store
// against raw go-redis commands on the same client. Only `bench buildstatus` exists so far.
func NewBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark a block's Redis store against raw Redis commands",
	}
	cmd.AddCommand(newBenchBuildStatusCommand())
	cmd.AddCommand(newBenchQueueCommand())
	cmd.AddCommand(newBenchExecutorCommands()...)
	cmd.AddCommand(newBenchIndexCommand())
	cmd.AddCommand(newBenchFeedCommand())
	return cmd
}

// benchConn registers the flags every bench shares (the Redis connection flags of the shared
// configuration and --cpuprofile) and returns a setup function for RunE: it loads the
// configuration (--config, REDSTATE_* and flags, as every command does), connects to its Redis
// (standalone, Cluster or Sentinel) and starts the CPU profile; done closes both.
func benchConn(cmd *cobra.Command) (setup func() (client redis.UniversalClient, done func(), err error)) {
	var profile string
	f := cmd.Flags()
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	config.BindFlags(f, config.FlagsRedis)
	return func() (redis.UniversalClient, func(), error) {
		cfg, err := loadConfig(f)
		if err != nil {
			return nil, nil, err
		}
		if err := cfg.Validate(); err != nil {
			return nil, nil, err
		}
		if !cfg.Redis.Configured() {
			return nil, nil, errors.New("no Redis configured: a benchmark needs a real server; pass --redis URL, --redis-cluster host:port,... or --redis-sentinel with --redis-sentinel-master (or set them with --config FILE or REDSTATE_REDIS_*)")
		}
		a, err := newApp(cfg, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, nil, err
		}
		closeApp := func() { a.closeWithin(closeMargin) }
		if profile == "" {
			return a.redis, closeApp, nil
		}
		pf, err := os.Create(profile)
		if err != nil {
			closeApp()
			return nil, nil, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			_ = pf.Close()
			closeApp()
			return nil, nil, err
		}
		return a.redis, func() {
			pprof.StopCPUProfile()
			_ = pf.Close()
			closeApp()
		}, nil
	}
}

// withBench registers the shared bench flags on cmd and sets its RunE: connect, start the
// profile, run with the client, the progress writer (stderr) and the output (stdout), clean up.
func withBench(cmd *cobra.Command, run func(ctx context.Context, client redis.UniversalClient, progress, out io.Writer) error) {
	setup := benchConn(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		client, done, err := setup()
		if err != nil {
			return err
		}
		defer done()
		return run(cmd.Context(), client, cmd.ErrOrStderr(), cmd.OutOrStdout())
	}
}

// printComparisons writes a bench's table and one RESULT line per comparison.
func printComparisons(out io.Writer, cs []bench.Comparison, line func(i int) string) error {
	if len(cs) == 0 {
		return nil
	}
	if err := bench.PrintTable(out, cs); err != nil {
		return err
	}
	for i := range cs {
		if _, err := fmt.Fprintln(out, line(i)); err != nil {
			return err
		}
	}
	return nil
}

func newBenchBuildStatusCommand() *cobra.Command {
	var opts buildstatusbench.Options
	cmd := &cobra.Command{
		Use:   "buildstatus",
		Short: "Benchmark the build-status store: get, save and batch-get, ours vs raw",
		Long: `Seeds builds under a unique bench namespace, then measures, on the same go-redis
client and alternating in slices so both see the same conditions:

  get        redisstore Get      vs  GET key
  save       redisstore Save     vs  SET key json EX ttl
  batch_get  redisstore GetMany  vs  MGET key... (--batch keys)

Progress goes to stderr. stdout gets a table, then one line per operation:

  RESULT buildstatus.<op> ours=<ops/s> baseline=<ops/s> ratio=<ours/baseline> p99_ms=<ours> baseline_p99_ms=<raw>

The bench's keys are removed at the end (SCAN + UNLINK) unless --keep.`,
		Args: cobra.NoArgs,
	}
	withBench(cmd, func(ctx context.Context, client redis.UniversalClient, progress, out io.Writer) error {
		opts.Client, opts.Progress = client, progress
		cs, runErr := buildstatusbench.Run(ctx, opts)
		if err := printComparisons(out, cs, func(i int) string { return bench.ResultLine(cs[i]) }); err != nil {
			return err
		}
		return runErr
	})
	f := cmd.Flags()
	f.IntVar(&opts.Clients, "clients", 16, "concurrent clients")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time per operation and implementation")
	f.IntVar(&opts.Batch, "batch", 1000, "ids per batch-get (at most 1000)")
	f.IntVar(&opts.Size, "size", 2, "platforms per document (the seed's sample has 2)")
	f.IntVar(&opts.Builds, "builds", 10000, "builds seeded before measuring")
	f.StringSliceVar(&opts.Ops, "ops", nil, "operations to run: get, save, batch_get (default all)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the bench's keys in Redis")
	return cmd
}
