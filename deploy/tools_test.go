package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

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
