package benchcmd

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/queuebench"
)

func newBenchQueueCommand() *cobra.Command {
	var opts queuebench.Options
	var target bench.Target
	cmd := benchCommand(&cobra.Command{
		Use:   "queue",
		Short: "Benchmark the job queue against hibiken/asynq: enqueue, then drain with no-op handlers",
		Long: `Runs our job queue (redisqueue + queue.Worker) and hibiken/asynq on the same Redis,
through the same go-redis client, each on a fresh queue (unique key namespace / queue name):

  enqueue  --jobs jobs by --clients concurrent producers: throughput and per-enqueue latency
  process  one server with --concurrency no-op handlers drains the jobs: throughput is
           jobs / (first dequeue .. last job done), the queue filled beforehand (settle only)

and enqueue with options, --jobs jobs by --clients producers, each side on a fresh queue:

  delayed  ours EnqueueJob with Delay 1h; asynq Enqueue with ProcessIn(1h)
  unique   ours EnqueueJob with UniqueFor 1h; asynq Enqueue with Unique(1h); distinct
           payloads (the lock is on the payload's hash on both sides), so every one succeeds

asynq runs with a single queue, its default intervals and default task options. With
--rounds > 1, rounds alternate the order (ours, asynq / asynq, ours) and results are summed.
--cases picks what runs (default process,delayed,unique).

Progress goes to stderr. stdout gets a table, then:

  RESULT queue.throughput ours=<jobs/s> baseline=<asynq jobs/s> ratio=<x>
  RESULT queue.process_cost redis_cpu_us=<ours> baseline_redis_cpu_us=<asynq> redis_us=<ours> baseline_redis_us=<asynq> client_cpu_us=<ours> baseline_client_cpu_us=<asynq>
  RESULT queue.enqueue ours=<jobs/s> baseline=<asynq jobs/s> ratio=<x> p99_ms=<ours>
  RESULT queue.enqueue_delayed ours=<jobs/s> baseline=<asynq jobs/s> ratio=<x> p99_ms=<ours> redis_us=<ours> baseline_redis_us=<asynq> redis_cpu_us=<ours> baseline_redis_cpu_us=<asynq>
  RESULT queue.enqueue_unique  (the same fields)

process_cost gives each side's cost per job over its processing phases: the Redis server's CPU
(INFO cpu), its time in the commands the side sent (INFO commandstats) and this process's CPU
(getrusage).
redis_us is the Redis server's time per enqueue in the commands the clients sent (INFO
commandstats: the scripts' usec, which includes the commands they call); redis_cpu_us is its CPU
time per enqueue (INFO cpu), which also counts reading, parsing and answering the requests;
stderr lists every command of each phase with its calls and µs per call.

Every key both created is removed at the end (SCAN + UNLINK) unless --keep.`,
	}, &target, func(ctx context.Context) (bench.Printer, error) {
		opts.Client, opts.Progress = target.Client, target.Progress
		rep, err := queuebench.Run(ctx, opts)
		if err != nil {
			return nil, err
		}
		return bench.PrintFunc(func(w io.Writer) error {
			if err := queuebench.PrintTable(w, rep); err != nil {
				return err
			}
			return bench.PrintLines(w, rep.ResultLines())
		}), nil
	})
	f := cmd.Flags()
	f.IntVar(&opts.Jobs, "jobs", 100000, "jobs enqueued and processed per implementation and round")
	f.IntVar(&opts.Concurrency, "concurrency", 10, "jobs processed at once (our workers' total Concurrency, asynq's Concurrency)")
	f.IntVar(&opts.Clients, "clients", 10, "concurrent producers while enqueuing")
	f.IntVar(&opts.Workers, "workers", 1, "queue.Workers (consumers) sharing --concurrency")
	f.IntVar(&opts.Rounds, "rounds", 1, "rounds, alternating which implementation goes first")
	f.DurationVar(&opts.BlockTimeout, "block-timeout", time.Second, "our workers' Dequeue blocking timeout")
	f.DurationVar(&opts.PromoteInterval, "promote-interval", time.Second, "our workers' retry-promotion / lease-recovery interval")
	f.StringSliceVar(&opts.Cases, "cases", queuebench.AllCases, "cases to run: "+strings.Join(queuebench.AllCases, ", "))
	f.BoolVar(&opts.Keep, "keep", false, "keep the bench's keys in Redis")
	return cmd
}
