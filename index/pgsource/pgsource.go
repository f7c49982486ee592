// Package pgsource feeds the CDC index from PostgreSQL logical decoding: a replication slot
// with the wal2json plugin (format version 2), read with SQL — peek a batch of whole
// transactions, apply them, record the position in Redis, then advance the slot — so delivery
// is at least once and the index's version check makes it effectively once. Each change is
// versioned (its transaction's commit LSN, its own LSN): a change's own LSN alone would
// interleave concurrent transactions.
//
// Before streaming, a backfill copies the rows that already exist by keyset pagination (never
// OFFSET), each versioned (slot LSN, 0): the slot was created before the copy, so every change
// the copy might have missed or read half-way is in the stream with a newer version and wins.
// Backfill progress (the last key copied per table) and the stream position live in Redis, so
// a restarted process resumes both.
package pgsource

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
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
	// Redis keeps the position and the backfill progress (required).
	Redis redis.UniversalClient
	// Slot is the replication slot (default index.DefaultSlot), created when missing.
	Slot string
	// Database is the index "db" of the changes (default: the PostgreSQL database's name).
	Database string
	// Tables are the source tables to follow ("schema.table" or "table" for public), each the
	// index table of the same name (required).
	Tables []string
	// BatchChanges bounds one peek (default 5000 rows; whole transactions are always read).
	BatchChanges int
	// BackfillPage is the backfill's page size (default 1000).
	BackfillPage int
	// PollInterval is the wait when the slot has nothing new (default 200ms).
	PollInterval time.Duration
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
	keys positionKeys
	// BackfilledRows counts rows copied by the backfill; LagBytes is the WAL not yet applied at
	// the last peek; LagSeconds the age of the last applied commit.
	BackfilledRows, LagBytes atomic.Int64
	lagMillis                atomic.Int64
	// Events counts the row changes applied from the stream.
	Events atomic.Int64
}

// LagSeconds is the age of the last applied commit when it was applied.
func (s *Source) LagSeconds() float64 { return float64(s.lagMillis.Load()) / 1000 }

// positionKeys are the Redis keys of a slot's progress.
type positionKeys struct{ position, snapshot, backfill string }

// New returns a Source. Errors: EINVALID.
func New(ix *index.Indexer, opts Options) (*Source, error) {
	if opts.DB == nil || opts.DB.Dialect != sqldb.Postgres || opts.Redis == nil || len(opts.Tables) == 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "pg source: a PostgreSQL database, a Redis client and at least one table are required")
	}
	if opts.Slot == "" {
		opts.Slot = index.DefaultSlot
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
	base := ix.SourceKeyPrefix() + "pg:" + opts.Slot
	return &Source{ix: ix, opts: opts, log: opts.Logger.With("source", "postgres", "slot", opts.Slot),
		keys: positionKeys{position: base + ":position", snapshot: base + ":snapshot", backfill: base + ":backfill"}}, nil
}

// Run creates the slot if needed, backfills, then streams until ctx ends (nil then). Failures
// are logged and retried.
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
	snapshot, err := s.ensureSlot(ctx)
	if err != nil {
		return err
	}
	for _, t := range s.opts.Tables {
		if err := s.backfill(ctx, t, snapshot); err != nil {
			return err
		}
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
	var exists bool
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)", s.opts.Slot).Scan(&exists); err != nil {
		return 0, sqldb.Map(err, "look up replication slot")
	}
	if !exists {
		var lsn string
		err := s.opts.DB.QueryRowContext(ctx, "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'wal2json')", s.opts.Slot).Scan(&lsn)
		if err != nil {
			return 0, sqldb.Map(err, "create replication slot (wal_level=logical and the wal2json plugin are required)")
		}
		if err := s.opts.Redis.Set(ctx, s.keys.snapshot, lsn, 0).Err(); err != nil {
			return 0, rediserr.Map(err, "record slot snapshot")
		}
		if err := s.opts.Redis.Del(ctx, s.keys.backfill, s.keys.position).Err(); err != nil {
			return 0, rediserr.Map(err, "reset backfill progress")
		}
		s.log.Info("replication slot created", "lsn", lsn)
	}
	lsn, err := s.opts.Redis.Get(ctx, s.keys.snapshot).Result()
	if errors.Is(err, redis.Nil) {
		// The slot exists but Redis lost its snapshot (flushed): use the slot's own start; the
		// backfill is then redone and every row is re-copied at that version.
		if err := s.opts.DB.QueryRowContext(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", s.opts.Slot).Scan(&lsn); err != nil {
			return 0, sqldb.Map(err, "read slot position")
		}
		if err := s.opts.Redis.Set(ctx, s.keys.snapshot, lsn, 0).Err(); err != nil {
			return 0, rediserr.Map(err, "record slot snapshot")
		}
	} else if err != nil {
		return 0, rediserr.Map(err, "read slot snapshot")
	}
	return index.ParseLSN(lsn)
}

// backfill copies table's existing rows by keyset pagination on the index table's key,
// resuming after the last key recorded in Redis.
func (s *Source) backfill(ctx context.Context, table string, snapshot uint64) error {
	schema, name := splitTable(table)
	spec, ok := s.ix.Table(s.opts.Database, name)
	if !ok {
		return redstate.Errorf(redstate.EINVALID, "pg source: table %s.%s is not declared in index.tables", s.opts.Database, name)
	}
	field := table
	last, err := s.opts.Redis.HGet(ctx, s.keys.backfill, field).Result()
	if err == nil && last == "\x00done" {
		return nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return rediserr.Map(err, "read backfill progress")
	}
	started := err == nil
	ident := quoteIdent(schema) + "." + quoteIdent(name)
	key := quoteIdent(spec.Key)
	var keyType string
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped",
		ident, spec.Key).Scan(&keyType); err != nil {
		return sqldb.Map(err, "read the key column type of "+table)
	}
	version := index.PostgresVersion(snapshot, 0)
	copied := 0
	s.log.Info("backfill started", "table", table, "resume_after", last)
	for ctx.Err() == nil {
		// t.<key> everywhere: a bare name in ORDER BY would mean the text output column.
		q := "SELECT t." + key + "::text AS backfill_key, row_to_json(t)::text FROM " + ident + " t ORDER BY t." + key + " LIMIT $1"
		args := []any{s.opts.BackfillPage}
		if started {
			q = "SELECT t." + key + "::text AS backfill_key, row_to_json(t)::text FROM " + ident + " t WHERE t." + key + " > ($2::text)::" + keyType + " ORDER BY t." + key + " LIMIT $1"
			args = append(args, last)
		}
		read := time.Now().UTC() // the rows' time: their state as of this read (no change time exists)
		rows, err := s.opts.DB.QueryContext(ctx, q, args...)
		if err != nil {
			return sqldb.Map(err, "backfill "+table)
		}
		var changes []index.Change
		for rows.Next() {
			var k, js string
			if err := rows.Scan(&k, &js); err != nil {
				rows.Close()
				return sqldb.Map(err, "backfill "+table)
			}
			var cols map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &cols); err != nil {
				rows.Close()
				return fmt.Errorf("backfill %s: %w", table, err)
			}
			changes = append(changes, index.Change{DB: s.opts.Database, Table: name, Op: index.OpUpsert, Row: index.TextRow(cols), Version: version, Time: read})
			last, started = k, true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return sqldb.Map(err, "backfill "+table)
		}
		if len(changes) == 0 {
			break
		}
		if _, err := s.ix.Apply(ctx, changes); err != nil {
			return err
		}
		copied += len(changes)
		s.BackfilledRows.Add(int64(len(changes)))
		if err := s.opts.Redis.HSet(ctx, s.keys.backfill, field, last).Err(); err != nil {
			return rediserr.Map(err, "record backfill progress")
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.log.Info("backfill done", "table", table, "rows", copied)
	return rediserr.Map(s.opts.Redis.HSet(ctx, s.keys.backfill, field, "\x00done").Err(), "record backfill done")
}

// wal2jsonAction is one row of wal2json format version 2.
type wal2jsonAction struct {
	Action   string      `json:"action"`
	Schema   string      `json:"schema"`
	Table    string      `json:"table"`
	Columns  []walColumn `json:"columns"`
	Identity []walColumn `json:"identity"`
	// Timestamp is the commit time of B/C rows (include-timestamp).
	Timestamp string `json:"timestamp"`
}

type walColumn struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// StreamOnce peeks up to BatchChanges rows of whole transactions, applies the committed ones
// newer than the recorded position, records the position and advances the slot. It returns
// how many changes it applied.
func (s *Source) StreamOnce(ctx context.Context) (int, error) {
	var posText string
	var pos uint64
	posText, err := s.opts.Redis.Get(ctx, s.keys.position).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, rediserr.Map(err, "read stream position")
	}
	if posText != "" {
		if pos, err = index.ParseLSN(posText); err != nil {
			return 0, err
		}
	}
	rows, err := s.opts.DB.QueryContext(ctx, `SELECT lsn::text, data FROM pg_logical_slot_peek_changes($1, NULL, $2,
		'format-version', '2', 'include-timestamp', 'true', 'include-types', 'false', 'add-tables', $3)`,
		s.opts.Slot, s.opts.BatchChanges, s.addTables())
	if err != nil {
		return 0, sqldb.Map(err, "peek slot")
	}
	var (
		changes, tx []index.Change
		lastLSN     uint64
		lastCommit  time.Time
	)
	for rows.Next() {
		var lsnText, data string
		if err := rows.Scan(&lsnText, &data); err != nil {
			rows.Close()
			return 0, sqldb.Map(err, "peek slot")
		}
		lsn, err := index.ParseLSN(lsnText)
		if err != nil {
			rows.Close()
			return 0, err
		}
		lastLSN = lsn
		var a wal2jsonAction
		if err := json.Unmarshal([]byte(data), &a); err != nil {
			rows.Close()
			return 0, fmt.Errorf("wal2json row at %s: %w", lsnText, err)
		}
		switch a.Action {
		case "B":
			tx = tx[:0]
		case "I", "U", "D":
			ch := index.Change{DB: s.opts.Database, Table: a.Table, Op: index.OpUpsert, Row: columnsRow(a.Columns), Version: index.Version(fmt.Sprintf("%016x", lsn))}
			if a.Action == "D" {
				ch.Op, ch.Row = index.OpDelete, columnsRow(a.Identity)
			}
			tx = append(tx, ch)
		case "C":
			if lsn > pos {
				at, _ := time.Parse("2006-01-02 15:04:05.999999-07", a.Timestamp)
				for _, ch := range tx {
					own, _ := parseHexLSN(string(ch.Version))
					ch.Version, ch.Time = index.PostgresVersion(lsn, own), at
					changes = append(changes, ch)
				}
				lastCommit = at
			}
			tx = tx[:0]
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, sqldb.Map(err, "peek slot")
	}
	if lastLSN == 0 {
		s.LagBytes.Store(0)
		return 0, nil
	}
	if len(changes) > 0 {
		if _, err := s.ix.Apply(ctx, changes); err != nil {
			return 0, err
		}
		s.Events.Add(int64(len(changes)))
	}
	if !lastCommit.IsZero() {
		s.lagMillis.Store(time.Since(lastCommit).Milliseconds())
	}
	if err := s.opts.Redis.Set(ctx, s.keys.position, index.FormatLSN(lastLSN), 0).Err(); err != nil {
		return 0, rediserr.Map(err, "record stream position")
	}
	if _, err := s.opts.DB.ExecContext(ctx, "SELECT pg_replication_slot_advance($1, $2::pg_lsn)", s.opts.Slot, index.FormatLSN(lastLSN)); err != nil {
		return 0, sqldb.Map(err, "advance slot")
	}
	var lag sql.NullInt64
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1", s.opts.Slot).Scan(&lag); err == nil {
		s.LagBytes.Store(lag.Int64)
	}
	return len(changes), nil
}

// addTables is wal2json's add-tables filter ("schema.table,…", public for bare names).
func (s *Source) addTables() string {
	out := make([]string, len(s.opts.Tables))
	for i, t := range s.opts.Tables {
		schema, name := splitTable(t)
		out[i] = schema + "." + name
	}
	return strings.Join(out, ",")
}

func columnsRow(cols []walColumn) map[string]*string {
	m := make(map[string]json.RawMessage, len(cols))
	for _, c := range cols {
		m[c.Name] = c.Value
	}
	return index.TextRow(m)
}

func parseHexLSN(s string) (uint64, error) {
	var v uint64
	_, err := fmt.Sscanf(s, "%x", &v)
	return v, err
}

func splitTable(t string) (schema, name string) {
	if s, n, ok := strings.Cut(t, "."); ok {
		return s, n
	}
	return "public", t
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
