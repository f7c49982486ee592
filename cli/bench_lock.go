package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/checkpointbench"
	"github.com/redstate/redstate/bench/lockbench"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/redisconn"
)

// newBenchExecutorCommands returns `bench lock` and `bench checkpoint`, the executor state
// layer's benchmarks.
func newBenchExecutorCommands() []*cobra.Command {
	return []*cobra.Command{newBenchLockCommand(), newBenchCheckpointCommand()}
}

// benchRedisFlags registers --redis / --redis-cluster and returns a connector for them.
func benchRedisFlags(cmd *cobra.Command) func() (redis.UniversalClient, error) {
	var redisURL, cluster string
	f := cmd.Flags()
	f.StringVar(&redisURL, "redis", "", "Redis URL of a standalone server, e.g. redis://127.0.0.1:6390 (this or --redis-cluster is required)")
	f.StringVar(&cluster, "redis-cluster", "", "comma-separated Redis Cluster seed addresses host:port")
	cmd.MarkFlagsMutuallyExclusive("redis", "redis-cluster")
	cmd.MarkFlagsOneRequired("redis", "redis-cluster")
	return func() (redis.UniversalClient, error) {
		if (redisURL == "") == (cluster == "") {
			return nil, errors.New("give exactly one of --redis URL or --redis-cluster addr,addr")
		}
		rc := config.Redis{URL: redisURL}
		if cluster != "" {
			rc.ClusterAddrs = strings.Split(cluster, ",")
		}
		return redisconn.New(rc)
	}
}

func newBenchLockCommand() *cobra.Command {
	var opts lockbench.Options
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Benchmark the executor's tenant lock against bsm/redislock: acquire+release cycles",
		Long: `Runs acquire+release cycles on the same go-redis client, alternating in slices, with
ours (executor/redisstate: SET NX PX plus a fencing token in one script) and
github.com/bsm/redislock (no fencing token):

  lock.cycle      uncontended: each client cycles its own key
  lock.contended  all clients over --keys keys, no retry; busy attempts are counted and only
                  successful cycles count towards cycles/s

stdout gets a table, then:

  RESULT lock.cycle ours=<cycles/s> baseline=<cycles/s> ratio=<x> p99_ms=<ours> baseline_p99_ms=<redislock>
  RESULT lock.contended ours=<cycles/s> baseline=<cycles/s> ratio=<x> ... ours_busy=<n> baseline_busy=<n>

The bench's keys (locks and fence counters) are removed at the end.`,
		Args: cobra.NoArgs,
	}
	connect := benchRedisFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		client, err := connect()
		if err != nil {
			return err
		}
		defer client.Close()
		opts.Client = client
		opts.Progress = cmd.ErrOrStderr()
		ms, runErr := lockbench.Run(cmd.Context(), opts)
		if len(ms) > 0 {
			out := cmd.OutOrStdout()
			cs := make([]bench.Comparison, len(ms))
			for i, m := range ms {
				cs[i] = m.Comparison
			}
			if err := bench.PrintTable(out, cs); err != nil {
				return err
			}
			for _, m := range ms {
				fmt.Fprintln(out, m.ResultLine())
			}
		}
		return runErr
	}
	f := cmd.Flags()
	f.IntVar(&opts.Clients, "clients", 16, "concurrent clients")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time per mode and implementation")
	f.IntVar(&opts.ContendedKeys, "keys", 4, "keys shared by all clients in the contended mode")
	return cmd
}

func newBenchCheckpointCommand() *cobra.Command {
	var opts checkpointbench.Options
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Benchmark the executor's checkpoint store against raw SET/GET",
		Long: `Seeds checkpoints under a unique bench namespace, then measures on the same go-redis
client, alternating in slices:

  put  Put (compare-and-set script)                 vs  SET key json PX ttl
  get  Get (local cache validated by GETRANGE)      vs  GET key

stdout gets a table, then one line per operation:

  RESULT checkpoint.<op> ours=<ops/s> baseline=<ops/s> ratio=<ours/baseline> p99_ms=<ours> baseline_p99_ms=<raw>`,
		Args: cobra.NoArgs,
	}
	connect := benchRedisFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		client, err := connect()
		if err != nil {
			return err
		}
		defer client.Close()
		opts.Client = client
		opts.Progress = cmd.ErrOrStderr()
		cs, runErr := checkpointbench.Run(cmd.Context(), opts)
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
	}
	f := cmd.Flags()
	f.IntVar(&opts.Clients, "clients", 16, "concurrent clients")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time per operation and implementation")
	f.IntVar(&opts.Tasks, "tasks", 1000, "checkpoints seeded before measuring")
	f.IntVar(&opts.Stages, "stages", 5, "completed stages per checkpoint")
	return cmd
}
