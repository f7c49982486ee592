package sqltest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/redstate/redstate/sqldb"
)

// MariaDBUser and MariaDBPassword are the account the test server's DSNs use: it may do
// anything on every database and holds REPLICATION SLAVE and REPLICATION CLIENT, as a binlog
// reader needs.
const (
	MariaDBUser     = "redstate"
	MariaDBPassword = "redstate-test-pw"
)

// MariaDBTimeZone is the test server's global time_zone: deliberately neither UTC nor the
// machine's zone, so that a time column read or written in the server's zone shows.
const MariaDBTimeZone = "+05:30"

// MariaDBServer is the test binary's private MariaDB server.
type MariaDBServer struct {
	// Port is its loopback TCP port.
	Port int
	// Socket is its Unix socket (root@localhost, without a password, connects there).
	Socket string
	// DataDir is its data directory; the binary logs (binlog.*) are kept there.
	DataDir string

	dir  string
	bin  string              // mariadbd
	cred *syscall.Credential // whom it runs as (nil: the current user)
	proc *process
}

// mariaDB is the test binary's MariaDB server.
var mariaDB shared[MariaDBServer]

// MariaDB returns a fresh, empty database on the test binary's MariaDB server, dropped when
// the test ends. See MariaDBDSN.
func MariaDB(t testing.TB) *sqldb.DB {
	t.Helper()
	return openFor(t, MariaDBDSN(t)) // closed before the drop registered by MariaDBDSN
}

// MariaDBDSN creates a fresh, empty database (utf8mb4) on the test binary's MariaDB server and
// returns its mysql:// DSN, for the user MariaDBUser; the database is dropped when the test
// ends. The server is started on first use (Debian's mariadb-server: a private data directory,
// a free loopback port, binary log on in ROW format with FULL row images, server id 1, global
// time_zone MariaDBTimeZone, no fsync for speed: a commit survives a crash of mariadbd, not
// of the machine), as user mysql when the tests run as
// root. Without MariaDB installed it skips the test, unless REDSTATE_REQUIRE_REDIS=1 (set by
// `make test`, which installs it), where it fails.
func MariaDBDSN(t testing.TB) string {
	t.Helper()
	srv := MariaDBTestServer(t)
	name := freshDatabase(t, srv.admin, "CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "DROP DATABASE IF EXISTS %s")
	return srv.DSN(name)
}

// MariaDBTestServer returns the test binary's MariaDB server, started on first use (see
// MariaDBDSN), for tests that need more than a database: the binary log, a restart.
func MariaDBTestServer(t testing.TB) *MariaDBServer {
	t.Helper()
	return need(t, "MariaDB", func() (*MariaDBServer, error) { return mariaDB.get(launchMariaDB) })
}

// DSN is the mysql:// DSN of database on the server, as MariaDBUser.
func (s *MariaDBServer) DSN(database string) string {
	return fmt.Sprintf("mysql://%s:%s@127.0.0.1:%d/%s", MariaDBUser, MariaDBPassword, s.Port, database)
}

// admin connects as root through the Unix socket.
func (s *MariaDBServer) admin() (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", s.Socket
	cfg.Timeout = 5 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	return db, nil
}

// mariadbBinaries finds mariadbd and mariadb-install-db: in $REDSTATE_MARIADB_BIN if set, else
// /usr/sbin and /usr/bin (Debian) or PATH.
func mariadbBinaries() (server, install string, err error) {
	find := func(name string, dirs ...string) string {
		if d := os.Getenv("REDSTATE_MARIADB_BIN"); d != "" {
			dirs = []string{d}
		}
		for _, d := range dirs {
			if p := filepath.Join(d, name); isExecutable(p) {
				return p
			}
		}
		if os.Getenv("REDSTATE_MARIADB_BIN") == "" {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
		return ""
	}
	server, install = find("mariadbd", "/usr/sbin", "/usr/bin"), find("mariadb-install-db", "/usr/bin", "/usr/sbin")
	if server == "" || install == "" {
		return "", "", errNotInstalled{"MariaDB not found (install Debian's mariadb-server, or run make test; REDSTATE_MARIADB_BIN may name the directory of mariadbd and mariadb-install-db)"}
	}
	return server, install, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// launchMariaDB initialises a data directory and runs mariadbd on it, as user mysql when root
// (mariadbd refuses to run as root without --user=root), then creates MariaDBUser.
func launchMariaDB() (*MariaDBServer, error) {
	server, install, err := mariadbBinaries()
	if err != nil {
		return nil, err
	}
	dir, cred, err := serverDir("redstate-mariadb-", "mysql", "running as root and there is no user mysql to run MariaDB as (install Debian's mariadb-server)")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := initialise(dir, cred, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	srv := &MariaDBServer{Socket: filepath.Join(dir, "sock"), DataDir: data, dir: dir, bin: server, cred: cred}
	err = onFreePort("mariadbd", func(port int) error {
		srv.Port = port
		return srv.run()
	})
	if err == nil {
		if err = srv.createUser(); err != nil {
			srv.proc.kill()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return srv, nil
}

// run starts mariadbd on the server's data directory and port and waits until it answers.
// Errors: errPortInUse, or the end of its error log.
func (s *MariaDBServer) run() error {
	logf := filepath.Join(s.dir, "mariadb.log")
	_ = os.Remove(logf)
	cmd := exec.Command(s.bin, "--no-defaults", "--datadir="+s.DataDir, "--port="+strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1", "--socket="+s.Socket, "--pid-file="+filepath.Join(s.dir, "mariadbd.pid"), "--tmpdir="+s.dir,
		"--log-error="+logf, "--skip-name-resolve", "--log-bin=binlog", "--binlog-format=ROW",
		"--binlog-row-image=FULL", "--server-id=1", "--default-time-zone="+MariaDBTimeZone,
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=32M", "--innodb-flush-log-at-trx-commit=2",
		"--sync-binlog=0", "--innodb-doublewrite=0", "--max-connections=500")
	cmd.Dir = s.dir
	p, err := startServer("mariadbd", cmd, s.cred, logf, []string{"Address already in use", "Do you already have another"}, 60*time.Second, s.ping)
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

// Restart stops the server, at once (SIGKILL, as a crash) when crash is set, else with a
// normal shutdown, and starts it again on the same port and data directory. Every test of
// the binary shares the server: a test that restarts it must not run in parallel with others
// that use it.
func (s *MariaDBServer) Restart(t testing.TB, crash bool) {
	t.Helper()
	mariaDB.mu.Lock()
	defer mariaDB.mu.Unlock()
	if crash {
		s.proc.kill()
	} else {
		s.proc.stop(syscall.SIGTERM, 15*time.Second)
	}
	if err := s.run(); err != nil {
		t.Fatalf("sqltest: restart mariadbd: %v", err)
	}
}

// createUser creates MariaDBUser with every privilege (replication ones included) on every
// database, reachable over TCP from anywhere (the server listens on loopback only).
func (s *MariaDBServer) createUser() error {
	a, err := s.admin()
	if err != nil {
		return err
	}
	defer a.Close()
	for _, q := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", MariaDBUser, MariaDBPassword),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION", MariaDBUser),
		fmt.Sprintf("GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '%s'@'%%'", MariaDBUser),
	} {
		if _, err := a.Exec(q); err != nil {
			return fmt.Errorf("mariadb: %s: %w", strings.SplitN(q, " IDENTIFIED", 2)[0], err)
		}
	}
	return nil
}

// ping answers nil once the server answers a query as root on the socket.
func (s *MariaDBServer) ping() error {
	db, err := s.admin()
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// stopMariaDB shuts the server down (SIGTERM, then kill) and removes its directory.
func stopMariaDB() {
	mariaDB.stop(func(s *MariaDBServer) {
		s.proc.stop(syscall.SIGTERM, 15*time.Second)
		_ = os.RemoveAll(s.dir)
	})
}
