package redistest

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMainWithStandalone_PointsTheExamplesAtItsServer: this package's own TestMain is
// MainWithStandalone, so redisAddr names the shared server, not the default.
func TestMainWithStandalone_PointsTheExamplesAtItsServer(t *testing.T) {
	RequireServer(t)
	shared.mu.Lock()
	srv := shared.standalone
	shared.mu.Unlock()
	if srv == nil || redisAddr != srv.Addr {
		t.Fatalf("redisAddr = %q, want the shared server's address (%v)", redisAddr, srv)
	}
}

// runChild runs this test binary again with args, in an environment where redis-server
// cannot be found when noServer is set, and returns its exit code and combined output.
func runChild(t *testing.T, noServer, require bool, args ...string) (int, string) {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDSTATE_REDIS_SERVER=") && !strings.HasPrefix(kv, "REDSTATE_REQUIRE_REDIS=") {
			env = append(env, kv)
		}
	}
	if noServer {
		env = append(env, "REDSTATE_REDIS_SERVER="+t.TempDir()+"/no-redis-server")
	}
	if require {
		env = append(env, "REDSTATE_REQUIRE_REDIS=1")
	}
	cmd := exec.Command(os.Args[0], append([]string{"-test.v", "-test.run=^ExampleMainWithStandalone$"}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("running %s: %v", os.Args[0], err)
	return 0, ""
}

func TestMainWithStandalone_NoServerLeavesTheExamplesOut(t *testing.T) {
	t.Parallel()
	code, out := runChild(t, true, false)
	if code != 0 || strings.Contains(out, "=== RUN   ExampleMainWithStandalone") || !strings.Contains(out, "examples left out: "+serverNotFound) {
		t.Fatalf("exit %d, want 0 with the example left out; output:\n%s", code, out)
	}
}

func TestMainWithStandalone_NoServerFailsWhenRequired(t *testing.T) {
	t.Parallel()
	code, out := runChild(t, true, true)
	if code == 0 || !strings.Contains(out, serverNotFound+" (REDSTATE_REQUIRE_REDIS=1)") {
		t.Fatalf("exit %d, want a failure naming REDSTATE_REQUIRE_REDIS; output:\n%s", code, out)
	}
}

func TestMainWithStandalone_ShortLeavesTheExamplesOut(t *testing.T) {
	t.Parallel()
	code, out := runChild(t, false, true, "-test.short")
	if code != 0 || strings.Contains(out, "=== RUN   ExampleMainWithStandalone") || !strings.Contains(out, "examples left out: they need redis-server") {
		t.Fatalf("exit %d, want 0 with the example left out; output:\n%s", code, out)
	}
}

func TestMainWithStandalone_RunsTheExamplesOnItsServer(t *testing.T) {
	t.Parallel()
	RequireServer(t)
	code, out := runChild(t, false, true)
	if code != 0 || !strings.Contains(out, "--- PASS: ExampleMainWithStandalone") {
		t.Fatalf("exit %d, want the example run and passed; output:\n%s", code, out)
	}
}

func TestSkipExamples_KeepsWhatIsAlreadySkipped(t *testing.T) {
	f := flag.Lookup("test.skip")
	before := f.Value.String()
	t.Cleanup(func() { _ = flag.Set("test.skip", before) })
	if err := flag.Set("test.skip", "TestA/sub"); err != nil {
		t.Fatal(err)
	}
	if err := skipExamples(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.Value.String(), "TestA/sub|^Example"; got != want {
		t.Fatalf("-test.skip = %q, want %q", got, want)
	}
}
