package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redstate/redstate/sqldb/sqltest"
)

// binary is the redstate binary built once for the whole package by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if testing.Short() {
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "redstate-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "redstate")
		build := exec.Command("go", "build", "-race", "-o", binary, "../cmd/redstate")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building redstate:", err)
			return 1
		}
		defer sqltest.Stop()
		return m.Run()
	}()
	os.Exit(code)
}

// server is one running `redstate serve` process.
type server struct {
	cmd  *exec.Cmd
	Base string // http://127.0.0.1:port

	mu   sync.Mutex
	logs strings.Builder
	done chan struct{}
}

// dataDirs holds each test's data directory, shared by every server the test starts (so a
// restarted process finds the SQL records of the one before).
var dataDirs sync.Map

// dataDir returns t's data directory (a temporary directory removed after the test).
func dataDir(t *testing.T) string {
	if d, ok := dataDirs.Load(t.Name()); ok {
		return d.(string)
	}
	d := t.TempDir()
	dataDirs.Store(t.Name(), d)
	t.Cleanup(func() { dataDirs.Delete(t.Name()) })
	return d
}

// startServer runs the real binary with args (plus --addr 127.0.0.1:0) and waits until it logs
// the address it listens on. Its output is captured losslessly, even across a SIGKILL: the
// process writes into an io.Pipe that os/exec copies into (Wait waits for the copy), and done
// closes only after the reader has consumed everything.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	if binary == "" {
		t.Skip("end-to-end tests need the built binary (not under -short)")
	}
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--data-dir", dataDir(t)}, args...)...)
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addrCh := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		s.readLogs(pr, addrCh)
		_, _ = io.Copy(io.Discard, pr) // never block the writer, even after a scan error
	}()
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		<-read
		close(s.done)
	}()
	t.Cleanup(func() { s.kill() })
	select {
	case addr := <-addrCh:
		s.Base = "http://" + addr
	case <-s.done:
		t.Fatalf("redstate exited before listening:\n%s", s.Logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("redstate did not log its listen address within 30s:\n%s", s.Logs())
	}
	return s
}

func (s *server) readLogs(r io.Reader, addrCh chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.logs.WriteString(line + "\n")
		s.mu.Unlock()
		if sent {
			continue
		}
		var entry struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Addr != "" && strings.Contains(entry.Msg, "listening") {
			addrCh <- entry.Addr
			sent = true
		}
	}
}

// Logs returns everything the process printed so far.
func (s *server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("redstate did not exit within 20s of SIGTERM:\n%s", s.Logs())
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("redstate exited with %d after SIGTERM:\n%s", code, s.Logs())
	}
}

func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// do sends a request with an optional JSON body and returns status and body.
func (s *server) do(t *testing.T, method, path, body string, headers ...string) (int, []byte, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.Base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" || (method != http.MethodGet && method != http.MethodHead) {
		req.Header.Set("Content-Type", "application/json") // the API requires it on state-changing requests
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\nserver logs:\n%s", method, path, err, s.Logs())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	validateResponse(t, req, resp.StatusCode, resp.Header, b)
	return resp.StatusCode, b, resp.Header
}

// eventually polls cond every 50ms until it holds or the deadline passes.
// eventuallyLogs is eventually that prints the last lines of s's logs when it times out.
func eventuallyLogs(t *testing.T, within time.Duration, what string, s *server, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			logs := s.Logs()
			if len(logs) > 8000 {
				logs = "…" + logs[len(logs)-8000:]
			}
			t.Fatalf("timed out after %s waiting for %s; server logs:\n%s", within, what, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
