package benchcmd

import (
	"time"

	"github.com/spf13/cobra"

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
	cmd := benchCommand(&cobra.Command{
		Use:   "lock",
		Short: "Benchmark the executor's tenant lock against bsm/redislock: acquire+release cycles",
		Long: `Runs acquire+release cycles on the same go-redis client, alternating in slices, with
ours (executor/redisstate: SET NX PX plus a fencing token in one script, sent through the
client's autopipeliner as serve sends it, so concurrent clients' calls share pipelines;
--direct-locks: each alone) and
github.com/bsm/redislock (no fencing token, one round trip per call on the client):

  lock.cycle      uncontended: each client cycles its own key
  lock.contended  all clients over --keys keys, no retry; busy attempts are counted and only
                  successful cycles count towards cycles/s

stdout gets a table, then:

  RESULT lock.cycle ours=<cycles/s> baseline=<cycles/s> ratio=<x> p99_ms=<ours> baseline_p99_ms=<redislock> clients=<n> server_us=<ours> baseline_server_us=<redislock> cmd_us=<ours> baseline_cmd_us=<redislock> client_us=<ours> baseline_client_us=<redislock>
  RESULT lock.contended ... ours_busy=<n> baseline_busy=<n> clients=<n> ...

one pair per --clients count (--clients 16,64 runs both modes at 16 callers, then at 64).
server_us is the Redis server's CPU time (INFO cpu) per attempt over the side's slices,
cmd_us its time inside the calls (INFO commandstats), client_us the bench process's CPU time
(getrusage); an attempt is a cycle or a busy try.
Then one line per side listing the commands the server ran per attempt:

  # lock.cycle clients=<n> ours: evalsha 2.00×<µs>, set 2.00×<µs>, ...

The bench's keys (locks and fence counters) are removed at the end.`,
	}, &opts.Target, runBench(lockbench.Run, &opts))
	f := cmd.Flags()
	f.IntSliceVar(&opts.Callers, "clients", []int{16}, "concurrent clients; a list (16,64) measures both modes at each count")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time per mode, caller count and implementation")
	f.IntVar(&opts.ContendedKeys, "keys", 4, "keys shared by all clients in the contended mode")
	f.BoolVar(&opts.BatchedLocks, "batched-locks", false, "send ours' scripts in batches through the client's half-duplex autopipeliner instead of streaming them (executor.persistence.redis.lock-pipelining batch)")
	f.BoolVar(&opts.DirectLocks, "direct-locks", false, "send each of ours' scripts alone on the client, not through its autopipeliner (as serve does with executor.persistence.redis.lock-pipelining off or redis.durability on)")
	return cmd
}

func newBenchCheckpointCommand() *cobra.Command {
	var opts checkpointbench.Options
	cmd := benchCommand(&cobra.Command{
		Use:   "checkpoint",
		Short: "Benchmark the executor's checkpoint store against raw SET/GET",
		Long: `Seeds checkpoints under a unique bench namespace, then measures on the same go-redis
client, alternating in slices:

  put  Put (compare-and-set script)                 vs  SET key json PX ttl
  get  Get (local cache validated by GETRANGE)      vs  GET key

stdout gets a table, then one line per operation:

  RESULT checkpoint.<op> ours=<ops/s> baseline=<ops/s> ratio=<ours/baseline> p99_ms=<ours> baseline_p99_ms=<raw>`,
	}, &opts.Target, runBench(checkpointbench.Run, &opts))
	f := cmd.Flags()
	suiteFlags(f, &opts.Target, &opts.Duration, "operation")
	f.IntVar(&opts.Tasks, "tasks", 1000, "checkpoints seeded before measuring")
	f.IntVar(&opts.Stages, "stages", 5, "completed stages per checkpoint")
	return cmd
}
