// Package benchcmd is the command line of redstate-bench (cmd/redstate-bench): one cobra
// subcommand per bench (buildstatus, queue, lock, checkpoint, index, feed), each running a
// block's store and its peer (asynq, redislock, raw go-redis commands, a Kafka sink,
// go-mysql-transfer's approach) side by side through the bench packages (bench/*bench) and
// printing a table and RESULT lines. It finds Redis as redstate does (flags, --config,
// REDSTATE_* variables). It lives apart from package cli so that the server binary links none
// of the peers.
package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/buildstatusbench"
	"github.com/redstate/redstate/cli"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/redisconn"
)

// NewRootCommand returns `redstate-bench`, whose subcommands benchmark a block's Redis store
// against the named peer or raw go-redis commands on the same client. It is a binary of its own
// so that the server (cmd/redstate) links none of the peers (asynq, redislock, kfake).
func NewRootCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redstate-bench",
		Short: "Benchmark redstate's blocks against their peers and raw Redis on the same server",
		Long: `redstate-bench runs one block's store and the peer a team would otherwise pick (or the raw
Redis commands that are the physical limit) side by side on the same Redis, alternating so both
see the same conditions, and prints a table and one RESULT line per measurement with the ratio
(ours / baseline). It finds Redis the way redstate does: --redis URL, --redis-cluster,
--redis-sentinel with --redis-sentinel-master, --config FILE, or REDSTATE_REDIS_* variables.
Every bench works under a unique key namespace and removes its keys at the end. See
docs/benchmarks.md for the figures and how to read them.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.AddCommand(newBenchBuildStatusCommand())
	cmd.AddCommand(newBenchQueueCommand())
	cmd.AddCommand(newBenchExecutorCommands()...)
	cmd.AddCommand(newBenchIndexCommand())
	cmd.AddCommand(newBenchFeedCommand())
	cmd.AddCommand(cli.NewVersionCommand("redstate-bench"))
	return cmd
}

// Execute runs the root command on os.Args and returns the process exit code: 0 on success, 1
// on any error, which is printed to stderr.
func Execute() int {
	if err := NewRootCommand().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "redstate-bench: %v\n", err)
		return 1
	}
	return 0
}

// conn is a bench run's connection: the Redis client of the configuration and, when
// redis.client-cache is on, the client-side cache on the same servers.
type conn struct {
	cfg    config.Config
	client redis.UniversalClient
	cache  *redisconn.Cache
}

// close closes the cache and the client.
func (c *conn) close() {
	if c.cache != nil {
		c.cache.Close()
	}
	_ = c.client.Close()
}

// benchConn registers the flags every bench shares (the Redis connection flags of the shared
// configuration, --client-cache and --cpuprofile) and returns a setup function for RunE: it
// loads the configuration (--config, REDSTATE_* and flags, as every redstate command does),
// connects to its Redis (standalone, Cluster or Sentinel; the client-side cache on unless
// --client-cache=false) and starts the CPU profile; done closes both.
func benchConn(cmd *cobra.Command) (setup func() (c *conn, done func(), err error)) {
	var profile string
	clientCache := true
	f := cmd.Flags()
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	f.BoolVar(&clientCache, "client-cache", true, "also measure the reads served by the client-side cache (turns redis.client-cache.enabled on for the run)")
	config.BindFlags(f, config.FlagsRedis)
	return func() (*conn, func(), error) {
		cfg, err := config.Load(config.ConfigPath(f, os.LookupEnv), f)
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
		client, err := redisconn.New(cfg.Redis)
		if err != nil {
			return nil, nil, err
		}
		c := &conn{cfg: cfg, client: client}
		if c.cache, err = redisconn.NewCache(cfg.Redis); err != nil {
			_ = client.Close()
			return nil, nil, err
		}
		if profile == "" {
			return c, c.close, nil
		}
		pf, err := os.Create(profile)
		if err != nil {
			c.close()
			return nil, nil, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			_ = pf.Close()
			c.close()
			return nil, nil, err
		}
		return c, func() {
			pprof.StopCPUProfile()
			_ = pf.Close()
			c.close()
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
		c, done, err := setup()
		if err != nil {
			return err
		}
		defer done()
		target.Client, target.Progress = c.client, cmd.ErrOrStderr()
		if c.cache != nil {
			target.Cache, target.Redis = c.cache, c.cfg.Redis
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
		Short: "Benchmark the build-status store: get, save and batch-get vs raw, save vs Dapr's state store",
		Long: `Seeds builds under a unique bench namespace, then measures, on the same go-redis
client and alternating in slices so both see the same conditions:

  get        redisstore Get      vs  GET key
  save       redisstore Save     vs  SET key json EX ttl
  batch_get  redisstore GetMany  vs  MGET key... (--batch keys)
  save_vs_dapr  redisstore Save with a compare-and-set (IfNoneMatch for a build's first
                write, then IfMatch with the ETag it returned)  vs  Dapr's Redis state store
                (components-contrib v1.16.1 state/redis, the real library) Set with
                first-write concurrency and the previous write's ETag, on fresh builds of the
                same documents; standalone only. The peer is its own Go module
                (bench/peers/daprstate, --dapr-peer), built with the go command and run as a
                child process; server CPU per save (INFO cpu) and each side's commands
                (INFO commandstats) are read around every slice

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
  # buildstatus.save_vs_dapr ours|dapr: <command> <calls>×<µs per call>, ...
  RESULT buildstatus.save_vs_dapr ours=… baseline=… ratio=… p99_ms=… baseline_p99_ms=… redis_cpu_us=<ours> baseline_redis_cpu_us=<Dapr> client_cpu_us=<ours> baseline_client_cpu_us=<Dapr>
  RESULT buildstatus.cache_staleness samples=<n> writers=<n> p50_ms=… p99_ms=… p999_ms=… max_ms=…
  RESULT buildstatus.cache_memory entries=<n> value_bytes=<n> bytes_per_entry=<n>

The bench's keys are removed at the end (SCAN + UNLINK) unless --keep.`,
	}, &opts.Target, runBench(buildstatusbench.Run, &opts))
	f := cmd.Flags()
	suiteFlags(f, &opts.Target, &opts.Duration, "operation")
	f.IntVar(&opts.Batch, "batch", 1000, "ids per batch-get (at most 1000)")
	f.IntVar(&opts.Size, "size", 2, "platforms per document (the seed's sample has 2)")
	f.IntVar(&opts.Builds, "builds", 10000, "builds seeded before measuring")
	f.StringSliceVar(&opts.Ops, "ops", nil, "operations to run: get, save, batch_get, save_vs_dapr, get_cached, batch_get_cached, staleness, memory (default all; save_vs_dapr on standalone only)")
	f.StringVar(&opts.DaprPeer, "dapr-peer", "", "save_vs_dapr's peer: the directory of its Go module or a built binary (default bench/peers/daprstate of this source tree)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the bench's keys in Redis")
	return cmd
}
