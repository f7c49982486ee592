package sqltest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redstate/redstate/sqldb"
)

// pgServer is the one PostgreSQL server of a test binary.
type pgServer struct {
	dir  string
	port int
	proc *process
}

// postgres is the test binary's PostgreSQL server.
var postgres shared[pgServer]

// Postgres returns a fresh, empty database on the test binary's PostgreSQL server (started on
// first use, on a free loopback port, with wal_level=logical and durability off for speed),
// dropped when the test ends. See the package doc for when it skips.
func Postgres(t testing.TB) *sqldb.DB {
	t.Helper()
	return openFor(t, PostgresDSN(t)) // closed before the drop registered by PostgresDSN
}

// PostgresDSN creates a fresh, empty database on the test server and returns its DSN (for
// tests that open it themselves, e.g. through serve's configuration); the database is dropped
// (connections forced out) when the test ends.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	srv := need(t, "PostgreSQL", func() (*pgServer, error) { return postgres.get(launchPostgres) })
	name := freshDatabase(t, srv.admin, "CREATE DATABASE %s", "DROP DATABASE IF EXISTS %s WITH (FORCE)")
	return srv.dsn(name)
}

func (s *pgServer) dsn(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, database)
}

// admin connects to the maintenance database postgres as the superuser.
func (s *pgServer) admin() (*sql.DB, error) {
	db, err := sqldb.Open(context.Background(), s.dsn("postgres"))
	if err != nil {
		return nil, err
	}
	return db.DB, nil
}

// binDir finds PostgreSQL's server binaries: $REDSTATE_PG_BIN, else the newest
// /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if d := os.Getenv("REDSTATE_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errNotInstalled{"PostgreSQL not found (install Debian's postgresql-15, or run make test; REDSTATE_PG_BIN may name its bin directory)"}
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// launchPostgres runs initdb and postgres in a fresh temporary directory, as user postgres
// when root.
func launchPostgres() (*pgServer, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, cred, err := serverDir("redstate-pg-", "postgres", "running as root and there is no user postgres to run PostgreSQL as (install Debian's postgresql-15)")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := initialise(dir, cred, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	srv := &pgServer{dir: dir}
	err = onFreePort("postgres", func(port int) error {
		srv.port = port
		logFile := filepath.Join(dir, "postgres.log")
		out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
		if err != nil {
			return err
		}
		defer out.Close() // postgres writes to its own copy
		cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "wal_level=logical", "-c", "max_wal_senders=10",
			"-c", "max_replication_slots=10", "-c", "max_connections=300", "-c", "shared_buffers=64MB")
		cmd.Stdout, cmd.Stderr, cmd.Dir = out, out, dir
		srv.proc, err = startServer("postgres", cmd, cred, logFile, []string{"already in use", "could not bind"}, 30*time.Second, srv.ping)
		return err
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return srv, nil
}

// ping opens and closes a connection to the server.
func (s *pgServer) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	db, err := sqldb.Open(ctx, s.dsn("postgres"))
	if err != nil {
		return err
	}
	return db.Close()
}

// stopPostgres shuts the server down (fast shutdown, then kill) and removes its directory.
func stopPostgres() {
	postgres.stop(func(s *pgServer) {
		s.proc.stop(syscall.SIGINT, 10*time.Second)
		_ = os.RemoveAll(s.dir)
	})
}
