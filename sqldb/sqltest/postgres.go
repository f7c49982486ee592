package sqltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redstate/redstate/sqldb"

	"github.com/redstate/redstate/internal/spawn"
)

// pgServer is the one PostgreSQL server of a test binary.
type pgServer struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	pgMu      sync.Mutex
	pgStarted *pgServer
	pgErr     error
)

// Postgres returns a fresh, empty database on the test binary's PostgreSQL server (started on
// first use, on a free loopback port, with wal_level=logical and durability off for speed),
// dropped when the test ends. See the package doc for when it skips.
func Postgres(t testing.TB) *sqldb.DB {
	t.Helper()
	dsn := PostgresDSN(t)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("sqltest: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() }) // runs before the drop registered by PostgresDSN
	return db
}

// PostgresDSN creates a fresh, empty database on the test server and returns its DSN (for
// tests that open it themselves, e.g. through serve's configuration); the database is dropped
// (connections forced out) when the test ends.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("sqltest: skipping test that needs PostgreSQL in -short mode")
	}
	srv, err := startPostgres()
	if err != nil {
		var missing errNotInstalled
		if errors.As(err, &missing) && os.Getenv("REDSTATE_REQUIRE_REDIS") != "1" {
			t.Skip(err.Error())
		}
		t.Fatalf("sqltest: %v", err)
	}
	name := "t_" + randomHex(6)
	ctx := context.Background()
	admin, err := sqldb.Open(ctx, srv.dsn("postgres"))
	if err != nil {
		t.Fatalf("sqltest: %v", err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("sqltest: create database: %v", err)
	}
	t.Cleanup(func() {
		if a, err := sqldb.Open(context.Background(), srv.dsn("postgres")); err == nil {
			_, _ = a.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = a.Close()
		}
	})
	return srv.dsn(name)
}

func (s *pgServer) dsn(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, database)
}

// errNotInstalled says PostgreSQL's binaries were not found.
type errNotInstalled struct{ msg string }

func (e errNotInstalled) Error() string { return e.msg }

// startPostgres starts the server once; later calls return it (or the first failure).
func startPostgres() (*pgServer, error) {
	pgMu.Lock()
	defer pgMu.Unlock()
	if pgStarted != nil || pgErr != nil {
		return pgStarted, pgErr
	}
	pgStarted, pgErr = launch()
	return pgStarted, pgErr
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

// launch runs initdb and postgres in a fresh temporary directory, as user postgres when root.
func launch() (*pgServer, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redstate-pg-")
	if err != nil {
		return nil, err
	}
	cred, err := unprivilegedAs(dir, "postgres", "running as root and there is no user postgres to run PostgreSQL as (install Debian's postgresql-15)")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		srv := &pgServer{dir: dir, port: port, done: make(chan struct{})}
		logf := filepath.Join(dir, "postgres.log")
		out, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			return nil, err
		}
		srv.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "wal_level=logical", "-c", "max_wal_senders=10",
			"-c", "max_replication_slots=10", "-c", "max_connections=300", "-c", "shared_buffers=64MB")
		srv.cmd.Stdout, srv.cmd.Stderr = out, out
		srv.cmd.Dir = dir
		srv.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
		if err := spawn.Start(srv.cmd); err != nil {
			_ = out.Close()
			return nil, fmt.Errorf("start postgres: %w", err)
		}
		go func() { _ = srv.cmd.Wait(); _ = out.Close(); close(srv.done) }()
		if err := srv.waitReady(30 * time.Second); err == nil {
			return srv, nil
		}
		srv.kill()
		log, _ := os.ReadFile(logf)
		if !strings.Contains(string(log), "already in use") && !strings.Contains(string(log), "could not bind") {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres did not start: %s", lastLines(string(log), 20))
		}
	}
	_ = os.RemoveAll(dir)
	return nil, errors.New("postgres: no free port after 5 attempts")
}

// waitReady waits until the server accepts a connection and answers a query.
func (s *pgServer) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.done:
			return errors.New("postgres exited during startup")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		db, err := sqldb.Open(ctx, s.dsn("postgres"))
		cancel()
		if err == nil {
			_ = db.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops the server at once (its whole process group) and waits for it.
func (s *pgServer) kill() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-s.done
}

// stopPostgres shuts the server down (fast shutdown, then kill) and removes its directory.
func stopPostgres() {
	pgMu.Lock()
	defer pgMu.Unlock()
	s := pgStarted
	if s == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.kill()
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // any child left behind
	_ = os.RemoveAll(s.dir)
	pgStarted = nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
