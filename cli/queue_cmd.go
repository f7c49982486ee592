package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
	"github.com/redstate/redstate/report/redisrecords"
	"github.com/redstate/redstate/report/sqlrecords"
)

// newQueueCommand returns `redstate queue`: admin commands on a job queue's Redis data (seed
// 004 sections 6-7): stats, dead letters (list, requeue one or all, purge) and regeneration.
func newQueueCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Enqueue, inspect and manage jobs and queues in Redis (jobs, pause, stats, dead letters, regenerate)",
		Long: `Admin commands for the job queue block. They talk to the configured Redis directly
(--redis, --redis-cluster, --redis-sentinel*, --config or REDSTATE_* variables), with the
same namespace as serve. The job commands (enqueue, inspect, cancel, list, requeue-job,
pause, resume) take the queue as their first argument; the others select it with --queue
(default report:queue, the seed's).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		queueSubcommand("stats", "Print the pending, running, retrying, scheduled and dead counts, whether the queue is paused and the pool of queue.pools serving it (a table; --json for scripts)", cobra.NoArgs, queueStats, flagJSON),
		queueSubcommand("dead", "Print dead letters, newest first (a table; --json for scripts; --start, --count)", cobra.NoArgs, queueDead, flagJSON|flagPage),
		queueSubcommand("requeue [RAW]", "Move one dead letter (its raw JSON) or, with --all, every dead letter back to pending", cobra.MaximumNArgs(1), queueRequeue, flagAll|flagYes),
		queueSubcommand("purge", "Delete every dead letter (needs --yes)", cobra.NoArgs, queuePurge, flagYes),
		// Records live in SQL by default: regenerate also takes --data-dir and --database.
		queueSubcommand("regenerate ID...", "Regenerate the reports of records in status 3 or 5 (seed: batchRegenerateReport) and print the seed's answer {SuccessCount, SkippedCount} as JSON; records are read from the configured queue.record-store (SQL by default)", cobra.MinimumNArgs(1), queueRegenerate, 0, config.FlagsData),
	)
	cmd.AddCommand(jobCommands()...)
	return cmd
}

// queueFlags are the values of the queue subcommands' flags; each subcommand defines only the
// flags it reads (see queueFlagSet).
type queueFlags struct {
	queue          string
	start, count   int
	all, yes, json bool
}

// queueFlagSet selects the flags a queue subcommand defines besides --queue.
type queueFlagSet int

const (
	// flagJSON is --json.
	flagJSON queueFlagSet = 1 << iota
	// flagPage is --start and --count.
	flagPage
	// flagAll is --all.
	flagAll
	// flagYes is --yes.
	flagYes
)

// queueSession is what a queue subcommand works on: the composition root (its Redis, and
// its SQL pool when a report admin needs the records) and --queue.
type queueSession struct {
	app    *app
	broker *redisqueue.Broker
	// admin is the queue admin of --queue.
	admin *queue.Admin
}

// queueSubcommand returns a queue subcommand that runs run on a session for --queue, with the
// Redis and namespace flags plus the extra flag groups.
func queueSubcommand(use, short string, args cobra.PositionalArgs, run func(*cobra.Command, *queueSession, *queueFlags, []string) error, flags queueFlagSet, extra ...config.FlagGroup) *cobra.Command {
	f := &queueFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRedisApp(cmd, func(a *app) error {
				s, err := openQueueSession(a, f.queue)
				if err != nil {
					return err
				}
				return run(cmd, s, f, args)
			})
		},
	}
	cmd.Flags().StringVar(&f.queue, "queue", report.DefaultQueue, "queue name")
	if flags&flagPage != 0 {
		cmd.Flags().IntVar(&f.start, "start", 0, "offset of the first dead letter (0 = newest)")
		cmd.Flags().IntVar(&f.count, "count", 100, "how many dead letters to print (at most 1000)")
	}
	if flags&flagAll != 0 {
		cmd.Flags().BoolVar(&f.all, "all", false, "move every dead letter back to pending")
	}
	if flags&flagYes != 0 {
		cmd.Flags().BoolVar(&f.yes, "yes", false, "confirm (without it the command only says what it would do and exits 1)")
	}
	if flags&flagJSON != 0 {
		cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON document (for scripts), as the HTTP API answers, instead of a table")
	}
	config.BindFlags(cmd.Flags(), append([]config.FlagGroup{config.FlagsRedis, config.FlagsNamespace}, extra...)...)
	return cmd
}

// openQueueSession returns the session of queueName on the root's Redis.
func openQueueSession(a *app, queueName string) (*queueSession, error) {
	broker, err := redisqueue.New(a.redis, redisqueue.Options{Namespace: a.cfg.Namespace})
	if err != nil {
		return nil, err
	}
	admin, err := queue.NewAdmin(broker, queueName)
	if err != nil {
		return nil, err
	}
	return &queueSession{app: a, broker: broker, admin: admin}, nil
}

// reportAdmin returns the report admin of the session's queue, with the records in the
// configured record store (queue.record-store: sql, the default, opens the database; redis;
// memory, always empty in a one-off command); the root closes the database.
func (s *queueSession) reportAdmin(ctx context.Context) (*report.Admin, error) {
	cfg := s.app.cfg
	var records report.RecordStore
	switch cfg.Queue.RecordStore {
	case report.RecordStoreSQL:
		db, err := s.app.sql(ctx)
		if err != nil {
			return nil, err
		}
		if records, err = sqlrecords.New(ctx, db, sqlrecords.Options{Retention: cfg.Queue.RecordRetention, Table: cfg.Report.SQL}); err != nil {
			return nil, err
		}
	case report.RecordStoreMemory:
		records = memrecords.New(memrecords.Options{})
	default:
		var err error
		if records, err = redisrecords.New(s.app.redis, redisrecords.Options{Namespace: cfg.Namespace, Retention: cfg.Queue.RecordRetention}); err != nil {
			return nil, err
		}
	}
	return report.NewAdmin(s.broker, records, report.Options{Queue: s.admin.Queue()})
}

func queueStats(cmd *cobra.Command, s *queueSession, f *queueFlags, _ []string) error {
	st, err := s.admin.Stats(cmd.Context())
	if err != nil {
		return err
	}
	paused, err := s.admin.Paused(cmd.Context())
	if err != nil {
		return err
	}
	pool := s.app.cfg.Queue.Membership(f.queue)
	if f.json {
		return writeJSON(cmd.OutOrStdout(), queue.NamedStats{Queue: f.queue, Stats: st, Paused: paused, Pool: pool})
	}
	t := newTable(cmd.OutOrStdout(), "QUEUE", "PENDING", "RUNNING", "RETRYING", "SCHEDULED", "DEAD", "PAUSED", "POOL")
	t.row(f.queue, st.Pending, st.Running, st.Retrying, st.Scheduled, st.Dead, paused, poolText(pool))
	return t.flush()
}

// poolText describes the pool serving a queue for a table: "main: strict, priority 2, 8
// handlers" (--json lists the pool's queues), or "-" for a queue in no pool.
func poolText(p *queue.PoolMembership) string {
	if p == nil {
		return "-"
	}
	if p.Strict {
		return fmt.Sprintf("%s: strict, priority %d, %d handlers", p.Pool, p.Weight, p.Concurrency)
	}
	return fmt.Sprintf("%s: weight %d, %d handlers", p.Pool, p.Weight, p.Concurrency)
}

func queueDead(cmd *cobra.Command, s *queueSession, f *queueFlags, _ []string) error {
	letters, err := s.admin.DeadLetters(cmd.Context(), f.start, f.count)
	if err != nil {
		return err
	}
	if f.json {
		if letters == nil {
			letters = []queue.DeadLetter{}
		}
		return writeJSON(cmd.OutOrStdout(), queue.DeadLetterPage{Queue: f.queue, Start: f.start, DeadLetters: letters})
	}
	t := newTable(cmd.OutOrStdout(), "RECORD", "JOB", "RETRIES", "FAILED AT", "LAST ERROR")
	for _, dl := range letters {
		if dl.Message == nil {
			t.row("-", "-", "-", "-", "unreadable: "+dl.Raw)
			continue
		}
		m := dl.Message
		var record any = "-"
		if id, err := report.RecordIDOf(*m); err == nil {
			record = id
		}
		t.row(record, m.JobID, m.RetryCount, m.FailedAt, m.LastError)
	}
	return t.flush()
}

func queueRequeue(cmd *cobra.Command, s *queueSession, f *queueFlags, args []string) error {
	a := s.admin
	switch {
	case f.all && len(args) == 0:
		if !f.yes {
			st, err := a.Stats(cmd.Context())
			if err != nil {
				return err
			}
			return notConfirmed("move all %d dead letters of the queue back to pending", st.Dead)
		}
		n, err := a.RequeueAllDead(cmd.Context())
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "requeued %d dead letters\n", n)
		return err
	case !f.all && len(args) == 1:
		if err := a.RequeueDead(cmd.Context(), args[0]); err != nil {
			return err
		}
		_, err := fmt.Fprintln(cmd.OutOrStdout(), "requeued 1 dead letter")
		return err
	}
	return errors.New("give either one dead letter's raw JSON (as printed by `redstate queue dead`) or --all")
}

func queuePurge(cmd *cobra.Command, s *queueSession, f *queueFlags, _ []string) error {
	a := s.admin
	if !f.yes {
		st, err := a.Stats(cmd.Context())
		if err != nil {
			return err
		}
		return notConfirmed("delete all %d dead letters of the queue", st.Dead)
	}
	n, err := a.PurgeDead(cmd.Context())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "purged %d dead letters\n", n)
	return err
}

func queueRegenerate(cmd *cobra.Command, s *queueSession, _ *queueFlags, args []string) error {
	ids := make([]int64, len(args))
	for i, s := range args {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("record id %q must be a positive integer", s)
		}
		ids[i] = id
	}
	a, err := s.reportAdmin(cmd.Context())
	if err != nil {
		return err
	}
	res, err := a.BatchRegenerate(cmd.Context(), ids)
	if err != nil {
		return err
	}
	return writeJSON(cmd.OutOrStdout(), res)
}
