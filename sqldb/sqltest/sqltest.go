// Package sqltest gives tests real databases for package sqldb: a fresh SQLite file, and a
// fresh database on a real PostgreSQL or MariaDB server that the package starts once per test
// binary (Debian's postgresql-15 and mariadb-server, run as the unprivileged users "postgres"
// and "mysql" when the tests run as root, since neither server runs as root). Each server has
// its own data directory under the temporary directory and listens on a free loopback port;
// no system instance is touched. Call Main from TestMain so the servers stop when the tests
// end; they are also killed by the kernel if the test binary dies (Pdeathsig).
//
// Without a server installed, Postgres and MariaDB skip the test, unless
// REDSTATE_REQUIRE_REDIS=1 (set by `make test`, which installs them), where they fail: CI
// never silently skips an engine.
package sqltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/redstate/redstate/sqldb"
)

// Main runs the tests and then stops the PostgreSQL and MariaDB servers, if started. Use it as
// `func TestMain(m *testing.M) { sqltest.Main(m) }`.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the PostgreSQL and MariaDB servers, if started: for a TestMain that does more
// than Main.
func Stop() {
	stopPostgres()
	stopMariaDB()
}

// SQLite returns a migrated-nothing SQLite database in a fresh file under t.TempDir, closed
// when the test ends.
func SQLite(t testing.TB) *sqldb.DB {
	t.Helper()
	return openFor(t, "sqlite:"+filepath.Join(t.TempDir(), "test.db"))
}

// Engine is one database engine tests run on.
type Engine struct {
	// Name is "SQLite", "Postgres" or "MariaDB", the subtest name.
	Name string
	// Open returns a fresh, empty database on the engine.
	Open func(t testing.TB) *sqldb.DB
}

// Engines are SQLite, PostgreSQL and MariaDB (standing for MySQL too).
var Engines = []Engine{{"SQLite", SQLite}, {"Postgres", Postgres}, {"MariaDB", MariaDB}}

// Each runs f as a subtest on a fresh database of every engine.
func Each(t *testing.T, f func(t *testing.T, db *sqldb.DB)) {
	t.Helper()
	for _, e := range Engines {
		t.Run(e.Name, func(t *testing.T) { f(t, e.Open(t)) })
	}
}
