package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/sqldb"
)

// needsSQL reports whether any block serve runs keeps its state in the SQL database.
func needsSQL(cfg config.Config) bool {
	return cfg.Queue.RecordStore == report.RecordStoreSQL || cfg.Feed.Enabled
}

// openSQL opens the SQL database of cfg (config.DatabaseURL), creating the data directory of
// the embedded SQLite database first. An unreachable database is an error: serve does not
// start without its source of truth.
func openSQL(ctx context.Context, cfg config.Config, log *slog.Logger) (*sqldb.DB, error) {
	dsn := cfg.DatabaseURL()
	if cfg.Database.URL == "" {
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
