package benchcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/indexbench"
)

func newBenchIndexCommand() *cobra.Command {
	var (
		opts   indexbench.Options
		my     indexbench.MySQLOptions
		kafka  indexbench.KafkaOptions
		source string
	)
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Benchmark the CDC tag index against the seed's algorithm and raw HGETALL, or its MySQL and Kafka sources against minimal sinks",
		Long: `--source generated (the default) generates a change stream over --rows rows (every row
inserted, half updated into another category so they move between index keys, a tenth deleted)
and applies it on the same go-redis client with:

  ours      index.Indexer: batches of --batch events, one Lua script run per row (32 rows a
            call) with the version compare-and-set, tombstones and the relation check
  baseline  the seed's algorithm per event: GET the relation key, then one pipeline of
            HDEL/HSET/SET (no version check)

then measures queries (Indexer.Query vs raw HGETALL of the same keys) and, with the
client-side cache (on unless --client-cache=false), the same queries through it
(query_cached; the 1,000 las/cat keys are the hot working set). stdout ends with:

  RESULT index.apply ours=<events/s> baseline=<events/s> ratio=<x>
  RESULT index.query ours=<queries/s> baseline=<raw HGETALL/s> ratio=<x>
  RESULT index.query_cached ours=<queries/s> baseline=<raw HGETALL/s> ratio=<x>

--source mysql --mysql-url mysql://user:pw@host:port/ measures the MySQL/MariaDB binlog source
(index/mysqlsource) end to end. The account must be able to create a database and read the
binary log (REPLICATION SLAVE, REPLICATION CLIENT); the server needs log-bin,
binlog_format=ROW and binlog_row_image=FULL (scripts/mariadb-local.sh starts such a server).
The bench creates a database and a table of its own, declares the table in the index, and
compares, over the same work:

  ours      index/mysqlsource: row images mapped to changes, batches of --batch (default
            1000) applied by index.Indexer (one Lua script run per row, 32 rows a call:
            version compare-and-set, relation, tombstone), the position recorded in Redis
            after each batch
  transfer  what go-mysql-transfer does for a Redis hash target, written here as its minimal
            equivalent (go-mysql-transfer is an application, not a library): a go-mysql
            BinlogSyncer, each row as a JSON object HSET into its index keys (HDEL from the
            keys its before image left), pipelined per --batch rows, the position SET after
            each pipeline; no version check, no relation key, no tombstone

Phases:

  bulk      --rows rows (default 200,000) changed by multi-row INSERTs of 1,000, one UPDATE of
            every row moving it to another index key, one DELETE of a tenth: 2.1 x --rows row
            changes, with the reader already streaming; rows/s = changes / (first statement's
            start until the reader has applied the server's position after the bulk). Ours
            and the transfer each alone (the table truncated between: the same statements)
  catchup   both read the first bulk's binlog range again from its start, alone, each into
            fresh keys: the same bytes, no MariaDB work meanwhile
  lag       ours streams while 4 connections commit --rate row changes/s (default 5,000) in
            transactions of --txn-rows rows for --duration (default 20s); 200 commits a
            second are timed from the commit's acknowledgement until a poll of the row's index
            key (every 0.25 ms, the 4 oldest pending) shows it

stdout ends with:

  RESULT index.mysql.bulk ours=<rows/s> baseline=<rows/s> ratio=<x>
  RESULT index.mysql.catchup ours=<rows/s> baseline=<rows/s> ratio=<x>
  RESULT index.mysql.lag rate=<achieved/s> p50=<ms> p99=<ms> max=<ms> samples=<n>

The bench's database is dropped and its keys removed at the end.

--source kafka measures the CDC index fed from Kafka instead (see --events):
` + kafkaBenchHelp + `
The bench's keys are removed at the end.`,
	}
	run := func(ctx context.Context) (bench.Printer, error) {
		f := cmd.Flags()
		switch source {
		case "generated":
			return indexbench.Run(ctx, opts)
		case "mysql":
			my.Target, my.Rows = opts.Target, opts.Rows
			if !f.Changed("rows") {
				my.Rows = 0 // the MySQL bench's own default
			}
			if f.Changed("batch") {
				my.Batch = opts.Batch
			}
			if my.URL == "" {
				return nil, redstate.Errorf(redstate.EINVALID, "bench index --source mysql needs --mysql-url mysql://user:password@host:port/")
			}
			return indexbench.RunMySQL(ctx, my)
		case "kafka":
			kafka.Target = opts.Target
			return indexbench.RunKafka(ctx, kafka)
		}
		return nil, redstate.Errorf(redstate.EINVALID, "bench index: --source is generated, mysql or kafka, not %q", source)
	}
	benchCommand(cmd, &opts.Target, run)
	f := cmd.Flags()
	f.StringVar(&source, "source", "generated", "the change stream: generated, mysql (a MariaDB/MySQL binary log; needs --mysql-url) or kafka (Canal flat messages through an in-process kfake cluster)")
	f.IntVar(&opts.Rows, "rows", 100000, "rows of the generated table (--source mysql: of the bulk, default 200000)")
	f.IntVar(&opts.Clients, "clients", 8, "concurrent appliers and queriers (generated)")
	f.IntVar(&opts.Batch, "batch", 256, "events per Apply call (generated: ours; mysql: both readers, default 1000)")
	f.DurationVar(&opts.QueryDuration, "query-duration", 5*time.Second, "measured query time per implementation (generated)")
	f.StringVar(&my.URL, "mysql-url", "", "the MySQL/MariaDB server, mysql://user:password@host:port/ (--source mysql)")
	f.IntVar(&my.Rate, "rate", 5000, "row changes per second of the lag phase (mysql)")
	f.IntVar(&my.TxnRows, "txn-rows", 10, "rows per transaction of the lag phase (mysql)")
	f.DurationVar(&my.Duration, "duration", 20*time.Second, "length of the lag phase (mysql)")
	kafkaBenchFlags(f, &kafka)
	return cmd
}
