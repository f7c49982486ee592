package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
// configuration, --client-cache and --cpuprofile) and returns a setup function for RunE: it
// loads the configuration (--config, REDSTATE_* and flags, as every command does), builds the
// root on its Redis (standalone, Cluster or Sentinel; the client-side cache on unless
// --client-cache=false) and starts the CPU profile; done closes both.
func benchConn(cmd *cobra.Command) (setup func() (a *app, done func(), err error)) {
	var profile string
	clientCache := true
	f := cmd.Flags()
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	f.BoolVar(&clientCache, "client-cache", true, "also measure the reads served by the client-side cache (turns redis.client-cache.enabled on for the run)")
	config.BindFlags(f, config.FlagsRedis)
	return func() (*app, func(), error) {
		cfg, err := loadConfig(f)
		if err != nil {
			return nil, nil, err
		}
		if clientCache {
			cfg.Redis.ClientCache.Enabled = true
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
			return a, closeApp, nil
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
		return a, func() {
			pprof.StopCPUProfile()
			_ = pf.Close()
			closeApp()
		}, nil
	}
}

// benchCommand completes cmd (its Use, Short and Long set) as a bench subcommand: the shared
// flags (the Redis connection and --cpuprofile; see benchConn), no arguments, and a RunE: connect, start the profile,
// point target at the client and the progress writer (stderr), run, print what was measured
// (also when the run then failed) to stdout, clean up. The caller adds the bench's own flags.
func benchCommand(cmd *cobra.Command, target *bench.Target, run func(ctx context.Context) (bench.Printer, error)) *cobra.Command {
	cmd.Args = cobra.NoArgs
	setup := benchConn(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a, done, err := setup()
		if err != nil {
			return err
		}
		defer done()
		target.Client, target.Progress = a.redis, cmd.ErrOrStderr()
		if a.cache != nil {
			target.Cache, target.Redis = a.cache, a.cfg.Redis
		}
		measured, runErr := run(cmd.Context())
		if measured != nil {
			if err := measured.Print(cmd.OutOrStdout()); err != nil {
				return err
			}
		}
		return runErr
	}
	return cmd
}

// runBench adapts a bench package's Run to benchCommand: it runs with *opts as the flags
// left them.
func runBench[O any, P bench.Printer](run func(context.Context, O) (P, error), opts *O) func(context.Context) (bench.Printer, error) {
	return func(ctx context.Context) (bench.Printer, error) { return run(ctx, *opts) }
}

// suiteFlags registers the load flags of the benches that measure operations one after the
// other (bench.Suite): --clients (16) into target and --duration (10s, measured time per
// <unit> and implementation) into d.
func suiteFlags(f *pflag.FlagSet, target *bench.Target, d *time.Duration, unit string) {
	f.IntVar(&target.Clients, "clients", 16, "concurrent clients")
	f.DurationVar(d, "duration", 10*time.Second, "measured time per "+unit+" and implementation")
}

func newBenchBuildStatusCommand() *cobra.Command {
	var opts buildstatusbench.Options
	cmd := benchCommand(&cobra.Command{
		Use:   "buildstatus",
		Short: "Benchmark the build-status store: get, save and batch-get, ours vs raw",
		Long: `Seeds builds under a unique bench namespace, then measures, on the same go-redis
client and alternating in slices so both see the same conditions:

  get        redisstore Get      vs  GET key
  save       redisstore Save     vs  SET key json EX ttl
  batch_get  redisstore GetMany  vs  MGET key... (--batch keys)

and, with the client-side cache (on unless --client-cache=false), the same reads through
it on the seeded working set, and two cache measurements:

  get_cached        Get through the cache      vs  GET key
  batch_get_cached  GetMany through the cache  vs  MGET key...
  staleness         --clients writers save builds that a second instance (its own cache)
                    holds; each sample is how long after the save's acknowledgement that
                    instance still served the old version
  memory            heap growth per cached build after caching every seeded build

Progress goes to stderr. stdout gets a table, then one line per operation:

  RESULT buildstatus.<op> ours=<ops/s> baseline=<ops/s> ratio=<ours/baseline> p99_ms=<ours> baseline_p99_ms=<raw>
  RESULT buildstatus.cache_staleness samples=<n> writers=<n> p50_ms=… p99_ms=… p999_ms=… max_ms=…
  RESULT buildstatus.cache_memory entries=<n> value_bytes=<n> bytes_per_entry=<n>

The bench's keys are removed at the end (SCAN + UNLINK) unless --keep.`,
	}, &opts.Target, runBench(buildstatusbench.Run, &opts))
	f := cmd.Flags()
	suiteFlags(f, &opts.Target, &opts.Duration, "operation")
	f.IntVar(&opts.Batch, "batch", 1000, "ids per batch-get (at most 1000)")
	f.IntVar(&opts.Size, "size", 2, "platforms per document (the seed's sample has 2)")
	f.IntVar(&opts.Builds, "builds", 10000, "builds seeded before measuring")
	f.StringSliceVar(&opts.Ops, "ops", nil, "operations to run: get, save, batch_get, get_cached, batch_get_cached, staleness, memory (default all)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the bench's keys in Redis")
	return cmd
}
