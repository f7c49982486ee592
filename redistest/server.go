package redistest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/spawn"
)

const (
	// readyTimeout bounds how long a single server may take to answer PING.
	readyTimeout = 10 * time.Second
	// exitTimeout bounds how long we wait for a signalled server to exit.
	exitTimeout = 10 * time.Second
	// probeTimeout bounds one admin round trip.
	probeTimeout = time.Second
	// startAttempts is how many ports we try when a bind fails.
	startAttempts = 5
)

// errAddrInUse marks a start failure caused by a port that was taken between
// picking it and the server binding it; the caller may retry.
var errAddrInUse = errors.New("address already in use")

// Option configures a server started by StartStandalone.
type Option func(*options)

type options struct {
	// directives are extra redis.conf lines in order.
	directives [][2]string
	// cluster enables cluster mode (also requires a free bus port).
	cluster bool
	// sentinel starts the process with --sentinel.
	sentinel bool
}

// WithAppendOnly enables the append-only file ("appendonly yes") with
// "appendfsync always" when fsyncAlways is true and "appendfsync everysec"
// otherwise. With fsyncAlways, every acknowledged write survives Kill.
func WithAppendOnly(fsyncAlways bool) Option {
	fsync := "everysec"
	if fsyncAlways {
		fsync = "always"
	}
	return func(o *options) {
		o.directives = append(o.directives, [2]string{"appendonly", "yes"}, [2]string{"appendfsync", fsync})
	}
}

// WithConfig adds the redis.conf line "directive value". The value is written
// verbatim, so quote it as redis.conf expects if it contains spaces. A
// directive that the harness sets by default (for example save, appendonly,
// maxmemory-policy) replaces the default instead of being added after it.
func WithConfig(directive, value string) Option {
	return func(o *options) {
		o.directives = append(o.directives, [2]string{directive, value})
	}
}

// Server is one running (or stopped) redis-server process. Its address and
// directory stay the same across Kill, Stop and Restart.
type Server struct {
	// Addr is the server address, "127.0.0.1:port".
	Addr string
	// URL is the server URL, "redis://127.0.0.1:port", for redis.ParseURL.
	URL string
	// Dir is the server's private directory: config, log, AOF/RDB files and,
	// for cluster nodes, nodes.conf.
	Dir string

	bin  string
	port int
	opts options

	mu   sync.Mutex
	proc *process // nil when not running

	stall atomic.Pointer[stall] // the RunStalled in progress, if any
}

// process is one started redis-server process.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, valid after done is closed
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// RequireServer returns the path of the redis-server binary. The binary is
// looked up in $REDSTATE_REDIS_SERVER, then on PATH, then in /usr/bin and
// /usr/local/bin. Tests run with -short skip here, since tests that need
// Redis are integration tests. When no binary is found the test is skipped,
// unless REDSTATE_REQUIRE_REDIS=1, in which case it fails.
func RequireServer(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("redistest: skipping test that needs redis-server in -short mode")
	}
	if p, err := findServer(); err == nil {
		return p
	}
	if serverRequired() {
		t.Fatal(serverNotFound + " (REDSTATE_REQUIRE_REDIS=1)")
	}
	t.Skip(serverNotFound)
	return ""
}

// serverNotFound is why a test that needs redis-server is skipped (or fails) without one.
const serverNotFound = "redis-server not found; install Debian's redis-server or run make test"

// serverRequired reports whether a missing redis-server is a failure rather than a skip
// (REDSTATE_REQUIRE_REDIS=1, set by make test).
func serverRequired() bool { return os.Getenv("REDSTATE_REQUIRE_REDIS") == "1" }

func findServer() (string, error) {
	if p := os.Getenv("REDSTATE_REDIS_SERVER"); p != "" {
		return exec.LookPath(p)
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/local/bin/redis-server"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("redis-server not found")
}

// StartStandalone starts a standalone redis-server on a free loopback port
// in a fresh temporary directory. Persistence is off unless options enable
// it. The server is killed in t.Cleanup.
func StartStandalone(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin := RequireServer(t)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s, err := startNew(bin, t.TempDir(), o)
	if err != nil {
		t.Fatalf("redistest: start standalone: %v", err)
	}
	t.Cleanup(s.shutdown)
	return s
}

// Client returns a go-redis client connected to the server, closed in
// t.Cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill sends SIGKILL to the server (and anything it forked) and waits for it
// to exit. Data not yet written to disk is lost. Killing a stopped server is
// a no-op.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.kill(); err != nil {
		t.Fatalf("redistest: kill %s: %v", s.Addr, err)
	}
}

// Stop shuts the server down gracefully with SIGTERM (flushing the AOF and,
// if configured, saving the RDB) and waits for it to exit. Stopping a
// stopped server is a no-op.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("redistest: stop %s: %v", s.Addr, err)
	}
}

// Restart starts the server again on the same port with the same directory and
// config file, so AOF/RDB data, a cluster node's nodes.conf and whatever CONFIG
// REWRITE recorded (a replicaof set by Sentinel) survive. A running (or
// paused) server is stopped gracefully first. Restart returns when the server answers PING
// (with its data loaded); for a cluster node, when it also reports
// cluster_state:ok again.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.restart(); err != nil {
		t.Fatalf("redistest: restart %s: %v", s.Addr, err)
	}
}

// startNew starts a server with a freshly picked port, retrying with another
// port when the chosen one was taken in the meantime.
func startNew(bin, dir string, o options) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port, err := freePort(o.cluster)
		if err != nil {
			return nil, err
		}
		s := &Server{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			URL:  "redis://127.0.0.1:" + strconv.Itoa(port),
			Dir:  dir,
			bin:  bin,
			port: port,
			opts: o,
		}
		err = s.start(true)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	return nil, lastErr
}

// freePort returns a loopback port that was free a moment ago. For cluster
// nodes the cluster bus port (port+10000) must be free too.
func freePort(cluster bool) (int, error) {
	var lastErr error
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			lastErr = err
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !cluster {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			lastErr = err
			continue
		}
		_ = bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("redistest: no free loopback port: %v", lastErr)
}

// restart starts the process again on the same port, retrying briefly if the
// port is momentarily taken.
func (s *Server) restart() error {
	_ = s.sendRunning(syscall.SIGCONT) // a paused server must run to handle SIGTERM; not running is fine
	if err := s.stop(); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < startAttempts; attempt++ {
		if err = s.start(false); err == nil || !errors.Is(err, errAddrInUse) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if s.opts.cluster {
		return waitNodeOK(s, time.Now().Add(clusterTimeout))
	}
	return nil
}

func (s *Server) confPath() string {
	if s.opts.sentinel {
		return filepath.Join(s.Dir, "sentinel.conf")
	}
	return filepath.Join(s.Dir, "redis.conf")
}
func (s *Server) logPath() string { return filepath.Join(s.Dir, "redis.log") }
func (s *Server) outPath() string { return filepath.Join(s.Dir, "redis.out") }

// config renders the config file for the current port.
func (s *Server) config() string {
	type kv = [2]string
	base := []kv{
		{"port", strconv.Itoa(s.port)},
		{"bind", "127.0.0.1"},
		{"protected-mode", "no"},
		{"daemonize", "no"},
		{"dir", quote(s.Dir)},
		{"logfile", quote(s.logPath())},
	}
	if !s.opts.sentinel {
		base = append(base, kv{"save", `""`}, kv{"appendonly", "no"})
	}
	if s.opts.cluster {
		base = append(base,
			kv{"cluster-enabled", "yes"},
			kv{"cluster-config-file", "nodes.conf"},
			kv{"cluster-node-timeout", "5000"},
		)
	}
	overridden := map[string]bool{}
	var extra []kv
	for _, d := range s.opts.directives {
		name := strings.ToLower(d[0])
		replaced := false
		if !overridden[name] {
			for i := range base {
				if base[i][0] == name {
					base[i][1] = d[1]
					overridden[name] = true
					replaced = true
					break
				}
			}
		}
		if !replaced {
			extra = append(extra, d)
		}
	}
	var b strings.Builder
	b.WriteString("# generated by redistest\n")
	for _, d := range append(base, extra...) {
		b.WriteString(d[0] + " " + d[1] + "\n")
	}
	return b.String()
}

// quote returns s as a double-quoted redis.conf string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// start launches the process with the current port and waits until it is
// ready. With writeConf it (re)writes the config file; without, it keeps the file
// as the server left it: a restart then sees what CONFIG REWRITE recorded (Sentinel
// rewrites a data node's replicaof when it reconfigures it, and a sentinel its own
// state), as a real restarted server would. On failure the process is gone and the
// error carries the log tail.
func (s *Server) start(writeConf bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return fmt.Errorf("redistest: %s is already running", s.Addr)
	}
	if writeConf {
		if err := os.WriteFile(s.confPath(), []byte(s.config()), 0o600); err != nil {
			return err
		}
	}
	logStart := fileSize(s.logPath())
	outStart := fileSize(s.outPath())
	out, err := os.OpenFile(s.outPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	args := []string{s.confPath()}
	if s.opts.sentinel {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	setProcAttr(cmd)
	err = spawn.Start(cmd)
	_ = out.Close()
	if err != nil {
		return fmt.Errorf("redistest: exec %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.proc = p

	if err := s.waitReady(p); err != nil {
		_ = killGroup(cmd.Process.Pid)
		<-p.done
		s.proc = nil
		logTail := s.tail(logStart, outStart)
		if strings.Contains(logTail, "in use") {
			err = fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return fmt.Errorf("redistest: redis-server on %s did not start: %w\n%s", s.Addr, err, logTail)
	}
	return nil
}

// waitReady polls until the server on s.Addr answers PING with PONG and
// reports the pid of p (so we never mistake another server that grabbed the
// port for ours). A server still loading its AOF answers PING with -LOADING
// and is not ready yet.
func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(readyTimeout)
	pidLine := "process_id:" + strconv.Itoa(p.cmd.Process.Pid) + "\r\n"
	wait := 2 * time.Millisecond
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("process exited during startup (%v)", p.err)
		}
		pong, err := commandString(s.Addr, probeTimeout, "PING")
		if err == nil && pong == "PONG" {
			info, err := commandString(s.Addr, probeTimeout, "INFO", "server")
			if err == nil && strings.Contains(info, pidLine) {
				return nil
			}
			if err == nil {
				err = errors.New("another process answers on this port")
			}
			last = err
		} else if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v (last probe: %v)", readyTimeout, last)
		}
		time.Sleep(wait)
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// signal sends sig to the running process (or kills its group for SIGKILL)
// and waits for it to exit. It is a no-op when nothing runs.
func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return nil
	}
	if !p.exited() {
		var err error
		if sig == syscall.SIGKILL {
			err = killGroup(p.cmd.Process.Pid)
		} else {
			err = p.cmd.Process.Signal(sig)
		}
		if err != nil && !p.exited() {
			return err
		}
		select {
		case <-p.done:
		case <-time.After(exitTimeout):
			_ = killGroup(p.cmd.Process.Pid)
			<-p.done
			s.proc = nil
			return fmt.Errorf("did not exit within %v after %v; killed", exitTimeout, sig)
		}
	}
	s.proc = nil
	return nil
}

func (s *Server) kill() error { return s.signal(syscall.SIGKILL) }
func (s *Server) stop() error { return s.signal(syscall.SIGTERM) }

// shutdown is the cleanup action: kill without reporting.
func (s *Server) shutdown() { _ = s.kill() }

// alive reports whether the server process runs and answers PING.
func (s *Server) alive() bool {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.exited() {
		return false
	}
	pong, err := commandString(s.Addr, probeTimeout, "PING")
	return err == nil && pong == "PONG"
}

// tail returns the last lines written to the log and to stdout/stderr since
// the given offsets.
func (s *Server) tail(logFrom, outFrom int64) string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		from int64
	}{{s.logPath(), logFrom}, {s.outPath(), outFrom}} {
		data, err := os.ReadFile(f.name)
		if err != nil || int64(len(data)) <= f.from {
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data[f.from:], "\n"), []byte("\n"))
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "--- tail of %s ---\n%s\n", f.name, bytes.Join(lines, []byte("\n")))
	}
	if b.Len() == 0 {
		return "(no log output)"
	}
	return b.String()
}

func fileSize(name string) int64 {
	fi, err := os.Stat(name)
	if err != nil {
		return 0
	}
	return fi.Size()
}
