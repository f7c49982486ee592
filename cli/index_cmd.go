package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indexblock"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// maxEventLine bounds one line of a replayed or snapshot file.
const maxEventLine = 16 << 20

// newIndexCommand returns `redstate index`: replay recorded change streams and verify the
// index against its source.
func newIndexCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Replay change streams into the CDC index and verify it against its source",
		Long: `Commands for the CDC tag index (docs/index.md). They use the configured Redis and index.tables
(--config, --redis, REDSTATE_* variables), as serve does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newIndexReplayCommand(), newIndexVerifyCommand(), newIndexStatusCommand(), newIndexResnapshotCommand(),
		newIndexMigrateLayoutCommand())
	return cmd
}

// withIndexer runs f with the index of the configuration's tables on the root's Redis (see
// withRedisApp).
func withIndexer(cmd *cobra.Command, f func(*app, *index.Indexer) error) error {
	return withRedisApp(cmd, func(a *app) error {
		if len(a.cfg.Index.Tables) == 0 {
			return errors.New("no index.tables declared in the configuration")
		}
		opts := indexblock.Options(a.cfg.Namespace, a.cfg.Index)
		opts.Cluster = redisconn.IsCluster(a.redis)
		ix, err := index.New(indexblock.RedisStore(a.env()), a.cfg.Index.Tables, opts)
		if err != nil {
			return err
		}
		return f(a, ix)
	})
}

func newIndexReplayCommand() *cobra.Command {
	var format string
	var batch int
	cmd := &cobra.Command{
		Use:   "replay FILE.jsonl",
		Short: "Apply a recorded change stream (one event per line) to the index",
		Long: `Reads FILE (one event per line, in --format: native, canal or debezium; "-" for stdin)
and applies it in batches, with a progress bar on stderr and a summary on stdout. Replaying a
stream twice, or out of order, is safe: every change carries its version. Exits non-zero when
any event failed (unreadable, or refused by its table's declaration); the others are applied.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withIndexer(cmd, func(a *app, ix *index.Indexer) error {
				return replay(cmd.Context(), ix, args[0], format, batch, cmd.ErrOrStderr(), cmd.OutOrStdout())
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", index.FormatNative, "event format: native, canal or debezium")
	cmd.Flags().IntVar(&batch, "batch", 500, "events per apply")
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

// replay applies the events of path.
func replay(ctx context.Context, ix *index.Indexer, path, format string, batch int, progress, out io.Writer) error {
	if batch < 1 {
		return errors.New("--batch must be at least 1")
	}
	in, size := io.Reader(os.Stdin), int64(-1)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in = f
	}
	bar := progressbar.NewOptions64(size, append(progressOptions(progress, "replaying"), progressbar.OptionShowBytes(true))...)
	sc := bufio.NewScanner(io.TeeReader(in, bar))
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	var total index.Result
	events, start := 0, time.Now()
	var pending []json.RawMessage
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		p, err := index.ParseEventList(format, pending, uint64(events-len(pending)))
		if err != nil {
			return err
		}
		ix.CountSkipped(p.Skipped)
		ix.CountUnreadable(len(p.Errors))
		res, err := ix.Apply(ctx, p.Changes)
		if err != nil {
			return err
		}
		total.Applied += res.Applied
		total.Stale += res.Stale
		total.Skipped += res.Skipped + p.Skipped
		total.Failed += res.Failed + len(p.Errors)
		for _, e := range append(p.Errors, res.Errors...) {
			if len(total.Errors) < 20 {
				total.Errors = append(total.Errors, e)
			}
		}
		pending = pending[:0]
		return nil
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		events++
		pending = append(pending, json.RawMessage(line))
		if len(pending) >= batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := flush(); err != nil {
		return err
	}
	_ = bar.Finish()
	if err := ix.FlushCounters(ctx); err != nil {
		fmt.Fprintf(progress, "warning: the index counters (dashboard) were not updated: %v\n", err)
	}
	elapsed := time.Since(start)
	fmt.Fprintf(out, "replayed %d events in %s (%.0f events/s): %d applied, %d stale, %d skipped, %d failed\n",
		events, elapsed.Round(time.Millisecond), float64(events)/max(elapsed.Seconds(), 1e-9), total.Applied, total.Stale, total.Skipped, total.Failed)
	for _, e := range total.Errors {
		fmt.Fprintln(out, "  "+e)
	}
	if total.Failed > 0 {
		return fmt.Errorf("%d of %d events failed (listed above; the others were applied, and a replay after the fix is safe)", total.Failed, events)
	}
	return nil
}

func newIndexVerifyCommand() *cobra.Command {
	var snapshot, only, from string
	var repair bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Compare the index with its source tables (PostgreSQL, MySQL) or a JSONL snapshot; --repair fixes it",
		Long: `For every declared table (or --table db.table), reads the source rows — from the
PostgreSQL database of index.postgres.url for its followed tables (--source postgres, the
default), from the MySQL/MariaDB server of index.mysql.url (--source mysql), or from --snapshot FILE.jsonl
(lines {"db","table","row":{column: value}}) — and reports every missing, stale or extra index
entry as JSON, with progress on stderr. With --repair every difference is fixed (a rewritten
row gets a version just above its stored one, so later real changes still win). Exits 1 when
differences were found and not repaired.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withIndexer(cmd, func(a *app, ix *index.Indexer) error {
				return verify(cmd.Context(), a, ix, verifyFrom{snapshot: snapshot, source: from}, only, repair, cmd.ErrOrStderr(), cmd.OutOrStdout())
			})
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "JSONL snapshot of the source rows instead of PostgreSQL")
	cmd.Flags().StringVar(&only, "table", "", "verify only this db.table")
	cmd.Flags().StringVar(&from, "source", "postgres", "source database of the rows: postgres (index.postgres.url) or mysql (index.mysql.url)")
	cmd.Flags().BoolVar(&repair, "repair", false, "fix every difference")
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

// verifyFrom names where verify reads the source rows: a JSONL snapshot file, else the
// database of source ("postgres" or "mysql").
type verifyFrom struct{ snapshot, source string }

// verify runs Indexer.Verify for the selected tables.
func verify(ctx context.Context, a *app, ix *index.Indexer, from verifyFrom, only string, repair bool, progress, out io.Writer) error {
	cfg := a.cfg
	snapshot := from.snapshot
	var db *sqldb.DB
	if snapshot == "" {
		url := cfg.Index.Postgres.URL
		switch from.source {
		case "postgres", "":
			if url == "" {
				return errors.New("no source: pass --snapshot FILE.jsonl or configure index.postgres.url")
			}
		case "mysql":
			if cfg.Index.MySQL.URL == "" {
				return errors.New("no source: --source mysql needs index.mysql.url")
			}
			url = mysqlsource.SQLURL(cfg.Index.MySQL.URL)
		default:
			return fmt.Errorf("--source must be postgres or mysql, got %q", from.source)
		}
		var err error
		if db, err = a.sqlAt(ctx, url); err != nil {
			return err
		}
	}
	differences := false
	verified := 0
	for _, t := range ix.Tables() {
		name := t.DB + "." + t.Table
		if only != "" && only != name {
			continue
		}
		var source index.RowSource
		var enc index.Encoding // how the source writes values (binary ones differ)
		switch {
		case snapshot != "":
			source, enc = snapshotRows(snapshot, t.DB, t.Table), index.EncodingNative
		case from.source == "mysql":
			if !slices.Contains(cfg.Index.MySQL.Tables, name) {
				continue
			}
			source, enc = mysqlsource.TableRows(ctx, db, t.DB, t.Table), index.EncodingText
		default:
			pgTable, ok := followedTable(cfg, db, t)
			if !ok {
				continue
			}
			source, enc = postgresRows(ctx, db, pgTable), index.EncodingPostgres
		}
		bar := newProgressBar(progress, -1, "verifying "+name)
		rep, err := ix.Verify(ctx, t.DB, t.Table, source, enc, repair, func(n int) { _ = bar.Set(n) })
		_ = bar.Finish()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		verified++
		line, _ := json.Marshal(struct {
			Table string `json:"table"`
			index.VerifyReport
		}{name, rep})
		fmt.Fprintln(out, string(line))
		if !rep.Clean() && !repair {
			differences = true
		}
	}
	if verified == 0 {
		return errors.New("no table verified: check --table and that the tables are followed by index.postgres or index.mysql, or present in the snapshot")
	}
	if differences {
		return errors.New("the index differs from its source (run with --repair to fix it)")
	}
	return nil
}

// followedTable returns the PostgreSQL table index table t follows, if any.
func followedTable(cfg config.Config, db *sqldb.DB, t index.TableSpec) (string, bool) {
	dbName := cfg.Index.Postgres.Database
	if dbName == "" {
		_ = db.QueryRow("SELECT current_database()").Scan(&dbName)
	}
	if dbName != t.DB {
		return "", false
	}
	for _, pt := range cfg.Index.Postgres.Tables {
		if pt == t.Table || strings.HasSuffix(pt, "."+t.Table) {
			return pt, true
		}
	}
	return "", false
}

// postgresRows streams a table's rows as JSON objects.
func postgresRows(ctx context.Context, db *sqldb.DB, table string) index.RowSource {
	schema, name, ok := strings.Cut(table, ".")
	if !ok {
		schema, name = "public", table
	}
	ident := `"` + strings.ReplaceAll(schema, `"`, `""`) + `"."` + strings.ReplaceAll(name, `"`, `""`) + `"`
	return func(f func(map[string]*string) bool) error {
		rows, err := db.QueryContext(ctx, "SELECT row_to_json(t)::text FROM "+ident+" t")
		if err != nil {
			return sqldb.Map(err, "read "+table)
		}
		defer rows.Close()
		for rows.Next() {
			var js string
			if err := rows.Scan(&js); err != nil {
				return sqldb.Map(err, "read "+table)
			}
			var cols map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &cols); err != nil {
				return err
			}
			if !f(index.TextRow(cols)) {
				return nil
			}
		}
		return sqldb.Map(rows.Err(), "read "+table)
	}
}

// snapshotRows reads the rows of db.table from a JSONL snapshot.
func snapshotRows(path, db, table string) index.RowSource {
	return func(f func(map[string]*string) bool) error {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		sc := bufio.NewScanner(file)
		sc.Buffer(make([]byte, 64<<10), maxEventLine)
		n := 0
		for sc.Scan() {
			n++
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var line struct {
				DB    string                     `json:"db"`
				Table string                     `json:"table"`
				Row   map[string]json.RawMessage `json:"row"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				return fmt.Errorf("%s line %d: %w", path, n, err)
			}
			if line.DB == db && line.Table == table && !f(index.TextRow(line.Row)) {
				return nil
			}
		}
		return sc.Err()
	}
}

// indexStatusJSON is `index status --json`: the shared counters (as GET /v1/index/status).
type indexStatusJSON struct {
	Tables     []indexTableCounters `json:"tables"`
	Skipped    int64                `json:"skipped"`
	Unreadable int64                `json:"unreadable"`
}

type indexTableCounters struct {
	DB      string `json:"db"`
	Table   string `json:"table"`
	Applied int64  `json:"applied"`
	Stale   int64  `json:"stale"`
	Failed  int64  `json:"failed"`
}

func newIndexStatusCommand() *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print every declared table's changes applied, stale and failed, counted by all instances",
		Long: `Reads the counters every serve instance (and index replay) adds to Redis
(<index.key-prefix>:counters, every 5 s and when it stops): per declared table the changes applied,
stale (older than the stored version) and failed (dead-lettered), and the events skipped
(undeclared tables) and unreadable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withIndexer(cmd, func(a *app, ix *index.Indexer) error {
				c, err := ix.SharedCounters(cmd.Context())
				if err != nil {
					return err
				}
				st := indexStatusJSON{Tables: []indexTableCounters{}, Skipped: c.Skipped, Unreadable: c.Unreadable}
				for _, t := range ix.Tables() {
					n := c.Tables[index.TableRef{DB: t.DB, Table: t.Table}]
					st.Tables = append(st.Tables, indexTableCounters{DB: t.DB, Table: t.Table, Applied: n.Applied, Stale: n.Stale, Failed: n.Failed})
				}
				out := cmd.OutOrStdout()
				if *asJSON {
					return writeJSON(out, st)
				}
				tbl := newTable(out, "TABLE", "APPLIED", "STALE", "FAILED")
				for _, t := range st.Tables {
					tbl.row(t.DB+"."+t.Table, t.Applied, t.Stale, t.Failed)
				}
				if err := tbl.flush(); err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "skipped (undeclared tables): %d, unreadable events: %d\n", st.Skipped, st.Unreadable)
				return err
			})
		},
	}
	asJSON = bindJSON(cmd)
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}
