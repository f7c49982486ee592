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

// mysqlLockWait is how long Migrate waits for MySQL's migration lock (GET_LOCK) before
// giving up with EUNAVAILABLE.
const mysqlLockWait = 120 // seconds

// beginner is what a transaction starts on: a *sql.DB, or the *sql.Conn that holds MySQL's
// migration lock.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

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
// transaction lock, on SQLite on the database write lock, on MySQL on a named lock (GET_LOCK,
// per database) held by one connection for the whole call. MySQL commits DDL implicitly, so
// there a migration that fails half-way keeps the statements that ran before the failure:
// MySQL migrations are written to be re-run (CREATE TABLE IF NOT EXISTS, indexes declared in
// the CREATE TABLE). A database whose recorded version is
// newer than the code's is refused, so an old binary never writes to a schema it does not
// know. Errors: EINVALID (versions not 1..n in order), ECONFLICT (the database is newer),
// EUNAVAILABLE, EINTERNAL (a statement failed; the error names the migration).
func Migrate(ctx context.Context, db *DB, component string, migrations []Migration) error {
	for i, m := range migrations {
		if m.Version != i+1 || m.Up == nil {
			return redstate.Errorf(redstate.EINVALID, "migrations of %s must be numbered 1..n in order with Up set; entry %d has version %d", component, i, m.Version)
		}
	}
	var on beginner = db.DB
	if db.Dialect == MySQL {
		conn, release, err := mysqlMigrationLock(ctx, db)
		if err != nil {
			return err
		}
		defer release()
		on = conn
	}
	for _, m := range migrations {
		err := inTx(ctx, on, func(tx *sql.Tx) error {
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

// mysqlMigrationLock takes MySQL's migration lock, a named lock private to the current
// database, on a connection of its own, and returns that connection and the function that
// releases the lock and the connection. The lock goes with the session, so a process that
// dies holding it releases it. Errors: EUNAVAILABLE (not obtained within mysqlLockWait).
func mysqlMigrationLock(ctx context.Context, db *DB) (*sql.Conn, func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, Map(err, "migration lock")
	}
	const name = "CONCAT('redstate_migrate_', MD5(COALESCE(DATABASE(), '')))"
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+name+", ?)", mysqlLockWait).Scan(&got); err != nil {
		_ = conn.Close()
		return nil, nil, Map(err, "migration lock")
	}
	if got.Int64 != 1 {
		_ = conn.Close()
		return nil, nil, redstate.Errorf(redstate.EUNAVAILABLE, "migration lock: another process has been migrating this database for over %d s", mysqlLockWait)
	}
	return conn, func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK("+name+")")
		_ = conn.Close()
	}, nil
}

// lockAndReadVersion takes the migration lock inside tx (PostgreSQL; MySQL's is held by
// Migrate), creates MigrationsTable if missing and returns component's highest applied
// version (0 for none).
func lockAndReadVersion(ctx context.Context, db *DB, tx *sql.Tx, component string) (int, error) {
	if db.Dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationsLockKey)); err != nil {
			return 0, Map(err, "migration lock")
		}
	}
	text, suffix := "TEXT", ""
	if db.Dialect == MySQL { // a key column needs a length; utf8mb4, binary comparison
		text, suffix = "VARCHAR(190)", " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+MigrationsTable+` (
		component `+text+` NOT NULL,
		version INTEGER NOT NULL,
		name `+text+` NOT NULL,
		applied_at `+text+` NOT NULL,
		PRIMARY KEY (component, version))`+suffix); err != nil {
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
