package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/indexbench"
)

func newBenchIndexCommand() *cobra.Command {
	var opts indexbench.Options
	var source string
	var kafka indexbench.KafkaOptions
	run := func(ctx context.Context) (bench.Printer, error) {
		switch source {
		case "generated":
			return indexbench.Run(ctx, opts)
		case "kafka":
			kafka.Target = opts.Target
			return indexbench.RunKafka(ctx, kafka)
		}
		return nil, fmt.Errorf("--source %q: use generated or kafka", source)
	}
	cmd := benchCommand(&cobra.Command{
		Use:   "index",
		Short: "Benchmark the CDC tag index against the seed's algorithm and raw HGETALL",
		Long: `Generates a change stream over --rows rows (every row inserted, half updated into another
category so they move between index keys, a tenth deleted) and applies it on the same go-redis
client with:

  ours      index.Indexer: batches of --batch events, one Lua script per row with the version
            compare-and-set, tombstones and the relation check
  baseline  the seed's algorithm per event: GET the relation key, then one pipeline of
            HDEL/HSET/SET (no version check)

then measures queries (Indexer.Query vs raw HGETALL of the same keys). stdout ends with:

  RESULT index.apply ours=<events/s> baseline=<events/s> ratio=<x>
  RESULT index.query ours=<queries/s> baseline=<raw HGETALL/s> ratio=<x>

With --source kafka it measures the CDC index fed from Kafka instead (see --events):
` + kafkaBenchHelp + `
The bench's keys are removed at the end.`,
	}, &opts.Target, run)
	f := cmd.Flags()
	f.StringVar(&source, "source", "generated", "change stream: generated (in memory) or kafka (Canal flat messages through an in-process kfake cluster)")
	kafkaBenchFlags(f, &kafka)
	f.IntVar(&opts.Rows, "rows", 100000, "rows of the generated table")
	f.IntVar(&opts.Clients, "clients", 8, "concurrent appliers and queriers")
	f.IntVar(&opts.Batch, "batch", 256, "events per Apply call (ours)")
	f.DurationVar(&opts.QueryDuration, "query-duration", 5*time.Second, "measured query time per implementation")
	return cmd
}
