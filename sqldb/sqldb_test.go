package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

func TestMain(m *testing.M) { sqltest.Main(m) }

func TestRebind(t *testing.T) {
	cases := []struct{ in, pg string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = $1 AND b = $2"},
		{"INSERT INTO t VALUES (?, '?', ?)", "INSERT INTO t VALUES ($1, '?', $2)"},
		{"SELECT 'it''s ?' || ?", "SELECT 'it''s ?' || $1"},
		{`SELECT "odd?col" FROM t WHERE x = ?`, `SELECT "odd?col" FROM t WHERE x = $1`},
		{`SELECT "it's" FROM t WHERE x = ? AND y = '"?'`, `SELECT "it's" FROM t WHERE x = $1 AND y = '"?'`},
	}
	for _, c := range cases {
		if got := sqldb.Rebind(sqldb.Postgres, c.in); got != c.pg {
			t.Errorf("Rebind(postgres, %q) = %q, want %q", c.in, got, c.pg)
		}
		if got := sqldb.Rebind(sqldb.SQLite, c.in); got != c.in {
			t.Errorf("Rebind(sqlite, %q) = %q, want it unchanged", c.in, got)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:s3cret@db:5432/redstate?sslmode=disable": "postgres://app:***@db:5432/redstate?sslmode=disable",
		"postgres://app@db/redstate":                             "postgres://app@db/redstate",
		"sqlite:/var/lib/redstate/redstate.db":                   "sqlite:/var/lib/redstate/redstate.db",
		// The password as a query parameter, which pgx accepts too.
		"postgres://app@db/redstate?password=s3cret&sslmode=disable": "postgres://app@db/redstate?password=***&sslmode=disable",
		// A DSN url.Parse rejects (bad escape): its password position is unknown.
		"postgres://app:s3c%zzret@db/redstate": "postgres://(unparsable DSN)",
	} {
		if got := sqldb.RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(sqldb.RedactDSN(in), "s3c") {
			t.Errorf("RedactDSN(%q) shows the password", in)
		}
	}
}

func TestOpen_Errors(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"mysql://x", "sqlite:", ""} {
		if _, err := sqldb.Open(ctx, dsn); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("Open(%q) = %v, want EINVALID", dsn, err)
		}
	}
	_, err := sqldb.Open(ctx, "postgres://app:pw-not-shown@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) || strings.Contains(err.Error(), "pw-not-shown") {
		t.Errorf("Open(unreachable postgres) = %v, want EUNAVAILABLE without the password", err)
	}
}

// widgets is a two-step schema for the migration tests.
var widgets = []sqldb.Migration{
	{Version: 1, Name: "create widgets", Up: func(d sqldb.Dialect) []string {
		if d == sqldb.MySQL { // an indexed string needs a length
			return []string{"CREATE TABLE widgets (id BIGINT PRIMARY KEY, name VARCHAR(100) NOT NULL)"}
		}
		return []string{"CREATE TABLE widgets (id BIGINT PRIMARY KEY, name TEXT NOT NULL)"}
	}},
	{Version: 2, Name: "unique names", Up: func(sqldb.Dialect) []string {
		return []string{"CREATE UNIQUE INDEX widgets_name ON widgets (name)"}
	}},
}

func TestMigrate(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if err := sqldb.Migrate(ctx, db, "widgets", widgets[:1]); err != nil {
			t.Fatal(err)
		}
		if v, err := sqldb.SchemaVersion(ctx, db, "widgets"); err != nil || v != 1 {
			t.Fatalf("version = %d, %v; want 1", v, err)
		}
		for i := 0; i < 2; i++ { // the second call applies nothing
			if err := sqldb.Migrate(ctx, db, "widgets", widgets); err != nil {
				t.Fatal(err)
			}
		}
		if v, _ := sqldb.SchemaVersion(ctx, db, "widgets"); v != 2 {
			t.Fatalf("version = %d, want 2", v)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+sqldb.MigrationsTable+" WHERE component = 'widgets'").Scan(&n); err != nil || n != 2 {
			t.Fatalf("recorded migrations = %d, %v; want 2", n, err)
		}
		err := sqldb.Migrate(ctx, db, "widgets", widgets[:1])
		if !redstate.IsCode(err, redstate.ECONFLICT) || !strings.Contains(err.Error(), "newer than this redstate knows") {
			t.Fatalf("old code on a newer schema: %v", err)
		}
		if err := sqldb.Migrate(ctx, db, "x", []sqldb.Migration{{Version: 2, Up: widgets[0].Up}}); !redstate.IsCode(err, redstate.EINVALID) {
			t.Fatalf("misnumbered migrations: %v", err)
		}
	})
}

func TestMigrate_FailedMigrationLeavesNothing(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		bad := append(widgets[:1:1], sqldb.Migration{Version: 2, Name: "broken", Up: func(sqldb.Dialect) []string {
			return []string{"CREATE TABLE gadgets (id BIGINT PRIMARY KEY)", "THIS IS NOT SQL"}
		}})
		if err := sqldb.Migrate(ctx, db, "widgets", bad); err == nil || !strings.Contains(err.Error(), "migration widgets 2 (broken)") {
			t.Fatalf("broken migration: %v", err)
		}
		if v, _ := sqldb.SchemaVersion(ctx, db, "widgets"); v != 1 {
			t.Fatalf("version after a failed migration = %d, want 1", v)
		}
		if db.Dialect == sqldb.MySQL {
			return // MySQL commits DDL implicitly: its migrations are written to be re-run instead
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO gadgets (id) VALUES (1)"); err == nil {
			t.Fatal("the failed migration's first statement was kept")
		}
	})
}

func TestMigrate_ConcurrentCallsApplyOnce(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Go(func() { errs <- sqldb.Migrate(ctx, db, "widgets", widgets) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+sqldb.MigrationsTable).Scan(&n); err != nil || n != 2 {
			t.Fatalf("recorded migrations = %d, %v; want 2", n, err)
		}
	})
}

func TestInTx_AndErrors(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if err := sqldb.Migrate(ctx, db, "widgets", widgets); err != nil {
			t.Fatal(err)
		}
		insert := db.Rebind("INSERT INTO widgets (id, name) VALUES (?, ?)")
		if err := sqldb.InTx(ctx, db, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, insert, 1, "one")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		if err := sqldb.InTx(ctx, db, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, insert, 2, "two"); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Fatalf("InTx = %v, want boom", err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic not re-raised")
				}
			}()
			_ = sqldb.InTx(ctx, db, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, insert, 3, "three"); err != nil {
					return err
				}
				panic("boom")
			})
		}()
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM widgets").Scan(&n); err != nil || n != 1 {
			t.Fatalf("rows = %d, %v; want 1 (the failed and panicking transactions rolled back)", n, err)
		}
		_, err := db.ExecContext(ctx, insert, 9, "one")
		if !sqldb.IsUniqueViolation(err) || !redstate.IsCode(sqldb.Map(err, "insert"), redstate.ECONFLICT) {
			t.Fatalf("duplicate name: %v (unique %v)", err, sqldb.IsUniqueViolation(err))
		}
		_, err = db.ExecContext(ctx, "INSERT INTO nowhere VALUES (1)")
		if sqldb.IsUniqueViolation(err) || !redstate.IsCode(sqldb.Map(err, "insert"), redstate.EINTERNAL) {
			t.Fatalf("missing table: %v", err)
		}
		err = db.QueryRowContext(ctx, db.Rebind("SELECT name FROM widgets WHERE id = ?"), 404).Scan(new(string))
		if !redstate.IsCode(sqldb.Map(err, "get"), redstate.ENOTFOUND) {
			t.Fatalf("no rows: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = db.ExecContext(cctx, insert, 10, "ten")
		if !redstate.IsCode(sqldb.Map(err, "insert"), redstate.EUNAVAILABLE) {
			t.Fatalf("cancelled: %v", err)
		}
	})
}
