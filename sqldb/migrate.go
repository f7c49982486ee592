package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/redstate/redstate"
)

// MigrationsTable records the applied migrations of every component.
const MigrationsTable = "redstate_schema_migrations"

// migrationsLockKey is the PostgreSQL advisory lock that serialises Migrate across processes.
const migrationsLockKey = 0x7265647374617465 // "redstate"

// Migration is one numbered schema change of a component.
type Migration struct {
	// Version numbers the migration: a component's migrations are 1, 2, 3, … in order.
	Version int
	// Name says what it does ("create posts"); it is recorded with the version.
	Name string
	// Up returns the statements to run for the dialect, in order, in one transaction.
	Up func(d Dialect) []string
}

// Migrate brings component's schema to the newest of migrations: it applies, in order, each
// migration whose version is not yet recorded in MigrationsTable, each in its own
// transaction together with its record, so a failed migration leaves nothing half-applied and
// is retried by the next Migrate. Concurrent Migrate calls (several processes starting at
// once) apply each migration exactly once: on PostgreSQL they serialise on an advisory
// transaction lock, on SQLite on the database write lock. A database whose recorded version is
// newer than the code's is refused, so an old binary never writes to a schema it does not
// know. Errors: EINVALID (versions not 1..n in order), ECONFLICT (the database is newer),
// EUNAVAILABLE, EINTERNAL (a statement failed; the error names the migration).
func Migrate(ctx context.Context, db *DB, component string, migrations []Migration) error {
	for i, m := range migrations {
		if m.Version != i+1 || m.Up == nil {
			return redstate.Errorf(redstate.EINVALID, "migrations of %s must be numbered 1..n in order with Up set; entry %d has version %d", component, i, m.Version)
		}
	}
	for _, m := range migrations {
		err := InTx(ctx, db, func(tx *sql.Tx) error {
			current, err := lockAndReadVersion(ctx, db, tx, component)
			if err != nil {
				return err
			}
			if current > len(migrations) {
				return redstate.Errorf(redstate.ECONFLICT,
					"the database schema of %s is at version %d, newer than this redstate knows (%d): run a newer redstate", component, current, len(migrations))
			}
			if current >= m.Version {
				return nil
			}
			for _, stmt := range m.Up(db.Dialect) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return Map(err, fmt.Sprintf("migration %s %d (%s)", component, m.Version, m.Name))
				}
			}
			_, err = tx.ExecContext(ctx, db.Rebind("INSERT INTO "+MigrationsTable+" (component, version, name, applied_at) VALUES (?, ?, ?, ?)"),
				component, m.Version, m.Name, time.Now().UTC().Format(time.RFC3339Nano))
			return Map(err, "record migration")
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// lockAndReadVersion takes the migration lock inside tx, creates MigrationsTable if missing
// and returns component's highest applied version (0 for none).
func lockAndReadVersion(ctx context.Context, db *DB, tx *sql.Tx, component string) (int, error) {
	if db.Dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationsLockKey)); err != nil {
			return 0, Map(err, "migration lock")
		}
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+MigrationsTable+` (
		component TEXT NOT NULL,
		version INTEGER NOT NULL,
		name TEXT NOT NULL,
		applied_at TEXT NOT NULL,
		PRIMARY KEY (component, version))`); err != nil {
		return 0, Map(err, "create "+MigrationsTable)
	}
	var v sql.NullInt64
	if err := tx.QueryRowContext(ctx, db.Rebind("SELECT MAX(version) FROM "+MigrationsTable+" WHERE component = ?"), component).Scan(&v); err != nil {
		return 0, Map(err, "read schema version")
	}
	return int(v.Int64), nil
}

// SchemaVersion returns component's highest applied migration version (0 for none).
// Errors: EUNAVAILABLE, EINTERNAL.
func SchemaVersion(ctx context.Context, db *DB, component string) (int, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, db.Rebind("SELECT MAX(version) FROM "+MigrationsTable+" WHERE component = ?"), component).Scan(&v)
	if err != nil {
		return 0, Map(err, "read schema version")
	}
	return int(v.Int64), nil
}
