package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/sqldb"
)

// needsSQL reports whether any block serve runs keeps its state in the SQL database.
func needsSQL(cfg config.Config) bool {
	return cfg.Queue.RecordStore == report.RecordStoreSQL || cfg.Feed.Enabled
}

// openSQL opens the SQL database of cfg (config.DatabaseURL). With create (serve) it creates the
// data directory of the embedded SQLite database first, and SQLite creates the file; without
// (every admin command) a SQLite file that does not exist is an error naming its absolute path
// and the flags that point elsewhere, because opening it would create an empty database and
// the command would report on nothing (a relative data-dir read from another working
// directory). An unreachable database is an error: serve does not start without its source of
// truth.
func openSQL(ctx context.Context, cfg config.Config, create bool, log *slog.Logger) (*sqldb.DB, error) {
	dsn := cfg.DatabaseURL()
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok && path != ":memory:" && !create {
		if _, err := os.Stat(path); err != nil {
			abs, _ := filepath.Abs(path)
			return nil, fmt.Errorf("no SQL database at %s (%v): only serve creates one; run this command where serve runs, or point it at serve's database with --data-dir DIR or --database URL (REDSTATE_DATA_DIR, REDSTATE_DATABASE_URL)", abs, errors.Unwrap(err))
		}
	}
	if cfg.Database.URL == "" && create {
		if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
			return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
		}
	}
	db, err := sqldb.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("SQL database: %w (set database.url, or queue.record-store: redis or memory to run without SQL)", err)
	}
	log.Info("sql database", "engine", db.Dialect.String(), "dsn", db.DSN, "embedded", strings.HasPrefix(dsn, "sqlite:"))
	return db, nil
}
