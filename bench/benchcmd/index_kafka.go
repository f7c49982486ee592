package benchcmd

import (
	"github.com/spf13/pflag"

	"github.com/redstate/redstate/bench/indexbench"
)

// kafkaBenchHelp is the part of `bench index`'s help about --source kafka.
const kafkaBenchHelp = `
  An in-process kfake cluster gets two topics of --partitions partitions, each holding the same
  --events row changes as Canal flat messages of up to --rows-per-message rows (inserts,
  updates moving rows between index keys, deletes). Each implementation consumes one topic in
  its own consumer group:

  ours      index/kafkasource (offset versions, commit after apply) into index.Indexer
  baseline  the minimal Canal-to-Redis sink: a franz-go consumer writing each row with HSET
            (HDEL on delete), 100 records per pipeline; no version check, no relation key

  measuring the backlog (the whole topic, group join included), the steady case (the stream produced again while the
  consumer runs, first produce to last change applied) and produce-to-applied latency of
  --probes single messages, and the Redis server's CPU per event (INFO cpu). stdout ends with:

  RESULT index.kafka ours=<events/s> baseline=<events/s> ratio=<x> redis_cpu_us=… baseline_redis_cpu_us=…
  RESULT index.kafka_steady ours=<events/s> baseline=<events/s> ratio=<x> p50_ms=… p99_ms=… baseline_p50_ms=… baseline_p99_ms=…
`

// kafkaBenchFlags registers the flags of `bench index --source kafka` into opts.
func kafkaBenchFlags(f *pflag.FlagSet, opts *indexbench.KafkaOptions) {
	f.IntVar(&opts.Events, "events", 200000, "row changes produced (--source kafka)")
	f.IntVar(&opts.Partitions, "partitions", 8, "partitions of the topic (--source kafka)")
	f.IntVar(&opts.RowsPerMessage, "rows-per-message", 10, "most rows per Canal flat message (--source kafka)")
	f.IntVar(&opts.Probes, "probes", 200, "single-message latency probes (--source kafka)")
}
