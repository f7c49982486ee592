// Package pgsource feeds the CDC index from PostgreSQL logical decoding through a replication
// slot, with one of two plugins:
//
//   - pgoutput (the default, built into PostgreSQL): changes of a publication are streamed over
//     the replication protocol (github.com/jackc/pglogrepl); each transaction is applied to the
//     index, and only then confirmed to the server in a standby status update, so the slot never
//     advances past a change that is not in Redis. A restart resumes at the slot's confirmed
//     position; what was applied but not yet confirmed comes again and is stale by version.
//   - wal2json (format version 2), read with SQL: peek a batch of whole transactions, apply
//     them, record the position in Redis, then advance the slot.
//
// Delivery is at least once and the index's version check makes it effectively once. Each
// change is versioned by its transaction's commit LSN, then its order in the transaction (its
// own LSN with wal2json, its ordinal from 1 with pgoutput): a change's own LSN alone would
// interleave concurrent transactions.
//
// Before streaming, a backfill copies the rows that already exist by keyset pagination (never
// OFFSET), each versioned (slot LSN, 0): the slot was created before the copy, so every change
// the copy might have missed or read half-way is in the stream with a newer version and wins.
// Backfill progress (the last key copied per table) lives in Redis, so a restarted process
// resumes it; it is fenced (index.PagedSnapshot, backfillProgress), so a runner that stalled
// while another took over never moves it back.
package pgsource

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/sqldb"
)

// Options configure a Source. Zero fields take the defaults stated on them.
type Options struct {
	// DB is the PostgreSQL database (required; its user needs the REPLICATION attribute or
	// superuser, and the server wal_level=logical).
	DB *sqldb.DB
	// URL is DB's connection string, postgres://… (required with pgoutput: the replication
	// connection is opened from it).
	URL string
	// Plugin is index.PluginPgoutput (default) or index.PluginWal2JSON.
	Plugin string
	// Publication is the pgoutput publication (default: Slot's name, created by the source for
	// Tables and kept including them). A named publication must exist and include Tables.
	Publication string
	// Redis keeps the position and the backfill progress (required).
	Redis redis.UniversalClient
	// Slot is the replication slot (default index.DefaultSlot), created when missing.
	Slot string
	// Database is the index "db" of the changes (default: the PostgreSQL database's name).
	Database string
	// Tables are the source tables to follow ("schema.table" or "table" for public), each the
	// index table of the same name (required).
	Tables []string
	// BatchChanges bounds one peek of wal2json, or the changes pgoutput gathers before it
	// applies them (default 5000 rows; whole transactions are always read).
	BatchChanges int
	// BackfillPage is the backfill's page size (default 1000).
	BackfillPage int
	// PollInterval is the wait of wal2json when the slot has nothing new, and how long pgoutput
	// waits for more transactions before it applies what it holds (default 200ms).
	PollInterval time.Duration
	// StatusInterval is how often pgoutput confirms the applied position to the server, even
	// when idle (default 10s; the server also asks when it needs one).
	StatusInterval time.Duration
	// ErrorDelay is the wait after a failure (default 1s).
	ErrorDelay time.Duration
	// Logger receives progress and failures. Default slog.Default().
	Logger *slog.Logger
}

// Source streams a PostgreSQL database into an Indexer.
type Source struct {
	ix   *index.Indexer
	opts Options
	log  *slog.Logger
	keys index.PostgresSourceKeys
	// BackfilledRows counts rows copied by the backfill.
	BackfilledRows atomic.Int64
	// lagBytes is LagBytes; lagMillis LagSeconds in milliseconds.
	lagBytes, lagMillis atomic.Int64
	// Events counts the row changes applied from the stream.
	Events atomic.Int64
}

// LagSeconds is the age of the last applied commit when it was applied.
func (s *Source) LagSeconds() float64 { return float64(s.lagMillis.Load()) / 1000 }

// HistorySource names the source in the statistics history: "<plugin>:<slot>", e.g.
// "pgoutput:redstate_index".
func (s *Source) HistorySource() string { return s.opts.Plugin + ":" + s.opts.Slot }

// LagBytes is the WAL between the server's position and the applied one, at the last peek
// with wal2json, the last message with pgoutput.
func (s *Source) LagBytes() int64 { return s.lagBytes.Load() }

// New returns a Source. Errors: EINVALID.
func New(ix *index.Indexer, opts Options) (*Source, error) {
	if opts.DB == nil || opts.DB.Dialect != sqldb.Postgres || opts.Redis == nil || len(opts.Tables) == 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "pg source: a PostgreSQL database, a Redis client and at least one table are required")
	}
	if opts.Slot == "" {
		opts.Slot = index.DefaultSlot
	}
	switch opts.Plugin {
	case "":
		opts.Plugin = index.PluginPgoutput
	case index.PluginPgoutput, index.PluginWal2JSON:
	default:
		return nil, redstate.Errorf(redstate.EINVALID, "pg source: plugin must be pgoutput or wal2json, got %q", opts.Plugin)
	}
	if opts.Plugin == index.PluginPgoutput && opts.URL == "" {
		return nil, redstate.Errorf(redstate.EINVALID, "pg source: pgoutput needs the database URL for its replication connection")
	}
	if opts.Publication == "" {
		opts.Publication = opts.Slot
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = 10 * time.Second
	}
	if opts.BatchChanges <= 0 {
		opts.BatchChanges = 5000
	}
	if opts.BackfillPage <= 0 {
		opts.BackfillPage = 1000
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 200 * time.Millisecond
	}
	if opts.ErrorDelay <= 0 {
		opts.ErrorDelay = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Source{ix: ix, opts: opts, log: opts.Logger.With("source", "postgres", "slot", opts.Slot, "plugin", opts.Plugin),
		keys: ix.BlockKeys().Postgres(opts.Slot)}, nil
}

// Run checks the tables' replica identity, creates the publication (pgoutput) and the slot if
// needed, backfills, then streams until ctx ends (nil then). Failures are logged and retried.
func (s *Source) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		err := s.run(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		s.log.Error("index postgres source failed; retrying", "err", err, "retry_in", s.opts.ErrorDelay.String())
		select {
		case <-ctx.Done():
		case <-time.After(s.opts.ErrorDelay):
		}
	}
	return nil
}

func (s *Source) run(ctx context.Context) error {
	if s.opts.Database == "" {
		if err := s.opts.DB.QueryRowContext(ctx, "SELECT current_database()").Scan(&s.opts.Database); err != nil {
			return sqldb.Map(err, "read database name")
		}
	}
	if err := s.checkIdentity(ctx); err != nil {
		return err
	}
	if s.opts.Plugin == index.PluginPgoutput {
		// Before the slot: pgoutput reads the publication as of each decoded change.
		if err := s.ensurePublication(ctx); err != nil {
			return err
		}
	}
	snapshot, err := s.ensureSlot(ctx)
	if err != nil {
		return err
	}
	for _, t := range s.opts.Tables {
		if err := s.backfill(ctx, t, snapshot); err != nil {
			return err
		}
	}
	if s.opts.Plugin == index.PluginPgoutput {
		return s.stream(ctx)
	}
	for ctx.Err() == nil {
		n, err := s.StreamOnce(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(s.opts.PollInterval):
			}
		}
	}
	return nil
}

// ensureSlot creates the slot when missing and returns its snapshot LSN (the consistent point
// at creation, kept in Redis): backfilled rows are versioned by it.
func (s *Source) ensureSlot(ctx context.Context) (uint64, error) {
	var plugin string
	err := s.opts.DB.QueryRowContext(ctx, "SELECT plugin FROM pg_replication_slots WHERE slot_name = $1", s.opts.Slot).Scan(&plugin)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, sqldb.Map(err, "look up replication slot")
	}
	if err == nil && plugin != s.opts.Plugin {
		return 0, redstate.Errorf(redstate.EINVALID, "pg source: replication slot %s was created with plugin %s, not %s: set index.postgres.plugin: %s to keep it, "+
			"or drop it (SELECT pg_drop_replication_slot('%s')) to let redstate create it with %s (the backfill then runs again)",
			s.opts.Slot, plugin, s.opts.Plugin, plugin, s.opts.Slot, s.opts.Plugin)
	}
	if errors.Is(err, sql.ErrNoRows) {
		var lsn string
		err := s.opts.DB.QueryRowContext(ctx, "SELECT lsn::text FROM pg_create_logical_replication_slot($1, $2)", s.opts.Slot, s.opts.Plugin).Scan(&lsn)
		if err != nil {
			return 0, sqldb.Map(err, "create replication slot with "+s.opts.Plugin+" (wal_level=logical is required; wal2json also needs its package)")
		}
		if err := s.opts.Redis.Set(ctx, s.keys.Snapshot, lsn, 0).Err(); err != nil {
			return 0, rediserr.Map(err, "record slot snapshot")
		}
		if err := s.opts.Redis.Del(ctx, s.keys.Backfill, s.keys.Position).Err(); err != nil {
			return 0, rediserr.Map(err, "reset backfill progress")
		}
		s.log.Info("replication slot created", "lsn", lsn)
	}
	lsn, err := s.opts.Redis.Get(ctx, s.keys.Snapshot).Result()
	if errors.Is(err, redis.Nil) {
		// The slot exists but Redis lost its snapshot (flushed): use the slot's own start; the
		// backfill is then redone and every row is re-copied at that version.
		if err := s.opts.DB.QueryRowContext(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", s.opts.Slot).Scan(&lsn); err != nil {
			return 0, sqldb.Map(err, "read slot position")
		}
		if err := s.opts.Redis.Set(ctx, s.keys.Snapshot, lsn, 0).Err(); err != nil {
			return 0, rediserr.Map(err, "record slot snapshot")
		}
	} else if err != nil {
		return 0, rediserr.Map(err, "read slot snapshot")
	}
	return index.ParseLSN(lsn)
}

func splitTable(t string) (schema, name string) {
	if s, n, ok := strings.Cut(t, "."); ok {
		return s, n
	}
	return "public", t
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
