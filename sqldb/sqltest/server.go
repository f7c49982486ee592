package sqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redstate/redstate/internal/spawn"
	"github.com/redstate/redstate/sqldb"
)

// What the PostgreSQL and MariaDB harnesses share: one server of each kind per test binary,
// started on first use in a temporary directory (as an unprivileged user when root), on a
// free loopback port, in its own process group that dies with the test binary; and a fresh
// database per test.

// errNotInstalled says a server's binaries (or the user to run it as) were not found.
type errNotInstalled struct{ msg string }

func (e errNotInstalled) Error() string { return e.msg }

// errPortInUse says a server could not bind its port: another port may do.
var errPortInUse = errors.New("port in use")

// shared is the one server of a kind that a test binary starts.
type shared[S any] struct {
	mu      sync.Mutex
	started *S
	err     error
}

// get returns the server, launched on the first call; later calls return it or the first
// failure.
func (s *shared[S]) get(launch func() (*S, error)) (*S, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started != nil || s.err != nil {
		return s.started, s.err
	}
	s.started, s.err = launch()
	return s.started, s.err
}

// stop stops the server with stop, if it was started, and forgets it.
func (s *shared[S]) stop(stop func(*S)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started != nil {
		stop(s.started)
		s.started = nil
	}
}

// need returns the server get gives for t. It skips t in -short mode, and when the server is
// not installed unless REDSTATE_REQUIRE_REDIS=1 (then it fails t, as for any other failure).
func need[S any](t testing.TB, engine string, get func() (*S, error)) *S {
	t.Helper()
	if testing.Short() {
		t.Skip("sqltest: skipping test that needs " + engine + " in -short mode")
	}
	srv, err := get()
	if err != nil {
		var missing errNotInstalled
		if errors.As(err, &missing) && os.Getenv("REDSTATE_REQUIRE_REDIS") != "1" {
			t.Skip(err.Error())
		}
		t.Fatalf("sqltest: %v", err)
	}
	return srv
}

// freshDatabase creates a database of a random name through a new admin connection with the
// statement create (%s: the name) and returns the name; drop (%s: the name) removes it when
// the test ends.
func freshDatabase(t testing.TB, admin func() (*sql.DB, error), create, drop string) string {
	t.Helper()
	name := "t_" + randomHex(6)
	a, err := admin()
	if err != nil {
		t.Fatalf("sqltest: %v", err)
	}
	defer a.Close()
	if _, err := a.Exec(fmt.Sprintf(create, name)); err != nil {
		t.Fatalf("sqltest: create database: %v", err)
	}
	t.Cleanup(func() {
		if a, err := admin(); err == nil {
			_, _ = a.Exec(fmt.Sprintf(drop, name))
			_ = a.Close()
		}
	})
	return name
}

// openFor opens dsn for t; it is closed when the test ends, before the cleanups registered
// earlier (such as freshDatabase's drop) run.
func openFor(t testing.TB, dsn string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("sqltest: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// serverDir makes a temporary directory for a server (pattern as for os.MkdirTemp) and
// returns it with whom to run the server as (see unprivilegedAs; msg: the error when the user
// name is missing).
func serverDir(pattern, name, msg string) (string, *syscall.Credential, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	cred, err := unprivilegedAs(dir, name, msg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, cred, nil
}

// unprivilegedAs returns the credential to run a server with: nil (the current user) unless
// running as root, then the user name (missing is errNotInstalled with msg), made owner of dir.
func unprivilegedAs(dir, name, msg string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, errNotInstalled{msg}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// initialise runs a server's set-up program (initdb, mariadb-install-db) in dir as cred; a
// failure carries the end of its output.
func initialise(dir string, cred *syscall.Credential, program string, args ...string) error {
	cmd := exec.Command(program, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", program, err, lastLines(string(out), 20))
	}
	return nil
}

// onFreePort calls run with a free loopback port, and again with another while it fails with
// errPortInUse (another process took the port meanwhile), 5 times at most.
func onFreePort(name string, run func(port int) error) error {
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		if err := run(port); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return fmt.Errorf("%s: no free port after 5 attempts", name)
}

// process is a server process the package started.
type process struct {
	name string // the program, in errors
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
}

// startServer starts cmd as cred (nil: the current user) in its own process group, killed by
// the kernel if the test binary dies (Pdeathsig), and waits up to timeout until ready
// answers nil. When it does not, the process is killed and the error is errPortInUse if its
// log file says one of portInUse, else the log's end.
func startServer(name string, cmd *exec.Cmd, cred *syscall.Credential, logFile string, portInUse []string,
	timeout time.Duration, ready func() error) (*process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := spawn.Start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	if err := p.waitReady(timeout, ready); err == nil {
		return p, nil
	}
	p.kill()
	log, _ := os.ReadFile(logFile)
	for _, s := range portInUse {
		if strings.Contains(string(log), s) {
			return nil, errPortInUse
		}
	}
	return nil, fmt.Errorf("%s did not start: %s", name, lastLines(string(log), 20))
}

// waitReady waits until ready answers nil, up to timeout.
func (p *process) waitReady(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited during startup", p.name)
		default:
		}
		err := ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %v", p.name, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops the server at once (its whole process group) and waits for it.
func (p *process) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// stop asks the server to shut down with sig, kills it after grace, waits for it, and kills
// any child it left behind.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
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
