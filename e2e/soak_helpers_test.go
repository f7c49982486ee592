//go:build soak

package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// useNonRaceBinary makes startServer run a redstate built without the race detector for the
// rest of the test: measurements of memory and of 10,000 goroutines mean nothing (or exceed the
// race detector's limits) under -race.
func useNonRaceBinary(t *testing.T) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "redstate")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/redstate").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	saved := binary
	binary = bin
	t.Cleanup(func() { binary = saved })
}
