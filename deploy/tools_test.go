package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestMain removes the server binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	sqltest.Stop()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// serverBinary builds the redstate binary once for the package's tests and returns its path.
func serverBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "redstate-deploy-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "redstate")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/redstate")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// requireTool returns the path of program on PATH. A missing program skips the test, unless
// REDSTATE_REQUIRE_REDIS=1 (set by make test and CI, which install it with the named script),
// where it fails: CI never passes by skipping a check.
func requireTool(t *testing.T, program, install string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err == nil {
		return p
	}
	msg := program + " not found; run " + install
	if os.Getenv("REDSTATE_REQUIRE_REDIS") == "1" {
		t.Fatal(msg + " (REDSTATE_REQUIRE_REDIS=1)")
	}
	t.Skip(msg)
	return ""
}

// repoRoot is the repository's top directory (the parent of this package's directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	return filepath.Dir(filepath.Dir(file))
}

// readFile returns the content of path, relative to the repository's top directory.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lockedBuffer collects a process's output; waitFor waits for a substring to appear.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

// Write implements io.Writer.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor reports whether s was written before ctx ended.
func (b *lockedBuffer) waitFor(ctx context.Context, s string) bool {
	for {
		b.mu.Lock()
		if strings.Contains(b.buf.String(), s) {
			b.mu.Unlock()
			return true
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}
