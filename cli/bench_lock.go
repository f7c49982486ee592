package cli

import (
	"context"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/checkpointbench"
	"github.com/redstate/redstate/bench/lockbench"
)

// newBenchExecutorCommands returns `bench lock` and `bench checkpoint`, the executor state
// layer's benchmarks.
func newBenchExecutorCommands() []*cobra.Command {
	return []*cobra.Command{newBenchLockCommand(), newBenchCheckpointCommand()}
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
	withBench(cmd, func(ctx context.Context, client redis.UniversalClient, progress, out io.Writer) error {
		opts.Client, opts.Progress = client, progress
		ms, runErr := lockbench.Run(ctx, opts)
		cs := make([]bench.Comparison, len(ms))
		for i, m := range ms {
			cs[i] = m.Comparison
		}
		if err := printComparisons(out, cs, func(i int) string { return ms[i].ResultLine() }); err != nil {
			return err
		}
		return runErr
	})
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
	withBench(cmd, func(ctx context.Context, client redis.UniversalClient, progress, out io.Writer) error {
		opts.Client, opts.Progress = client, progress
		cs, runErr := checkpointbench.Run(ctx, opts)
		if err := printComparisons(out, cs, func(i int) string { return bench.ResultLine(cs[i]) }); err != nil {
			return err
		}
		return runErr
	})
	f := cmd.Flags()
	f.IntVar(&opts.Clients, "clients", 16, "concurrent clients")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time per operation and implementation")
	f.IntVar(&opts.Tasks, "tasks", 1000, "checkpoints seeded before measuring")
	f.IntVar(&opts.Stages, "stages", 5, "completed stages per checkpoint")
	return cmd
}
