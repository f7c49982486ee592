package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/buildstatusbench"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/redisconn"
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
	return cmd
}

func newBenchBuildStatusCommand() *cobra.Command {
	var (
		redisURL string
		cluster  string
		profile  string
		opts     buildstatusbench.Options
	)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc := config.Redis{URL: redisURL}
			if cluster != "" {
				rc.ClusterAddrs = strings.Split(cluster, ",")
			}
			if (redisURL == "") == (cluster == "") {
				return errors.New("give exactly one of --redis URL or --redis-cluster addr,addr")
			}
			client, err := redisconn.New(rc)
			if err != nil {
				return err
			}
			defer client.Close()
			opts.Client = client
			if profile != "" {
				pf, err := os.Create(profile)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			opts.Progress = cmd.ErrOrStderr()
			cs, runErr := buildstatusbench.Run(cmd.Context(), opts)
			if len(cs) > 0 {
				out := cmd.OutOrStdout()
				if err := bench.PrintTable(out, cs); err != nil {
					return err
				}
				for _, c := range cs {
					fmt.Fprintln(out, bench.ResultLine(c))
				}
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&redisURL, "redis", "", "Redis URL of a standalone server, e.g. redis://127.0.0.1:6390 (this or --redis-cluster is required)")
	f.StringVar(&cluster, "redis-cluster", "", "comma-separated Redis Cluster seed addresses host:port")
	f.IntVar(&opts.Clients, "clients", 16, "concurrent clients")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time per operation and implementation")
	f.IntVar(&opts.Batch, "batch", 1000, "ids per batch-get (at most 1000)")
	f.IntVar(&opts.Size, "size", 2, "platforms per document (the seed's sample has 2)")
	f.IntVar(&opts.Builds, "builds", 10000, "builds seeded before measuring")
	f.StringSliceVar(&opts.Ops, "ops", nil, "operations to run: get, save, batch_get (default all)")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the bench's keys in Redis")
	cmd.MarkFlagsMutuallyExclusive("redis", "redis-cluster")
	cmd.MarkFlagsOneRequired("redis", "redis-cluster")
	return cmd
}
