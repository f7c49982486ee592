package redistest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
)

// MainWithStandalone is Main for a package whose Example functions use Redis. An example
// takes no *testing.T, so it can neither start a server nor skip itself: MainWithStandalone
// starts the shared standalone server (the one SharedStandalone returns), hands its address
// ("127.0.0.1:port") to use before any test or example runs, runs them, stops the shared
// servers and exits with the tests' code. The package's example file declares the address
// its examples dial, and its TestMain points it at the private server:
//
//	// redisAddr is your Redis; the tests start their own.
//	var redisAddr = "127.0.0.1:6379"
//
//	func TestMain(m *testing.M) {
//		redistest.MainWithStandalone(m, func(addr string) { redisAddr = addr })
//	}
//
// Where RequireServer would skip a test, the examples are left out instead (^Example is added
// to -test.skip) and the tests run as usual: with -short, and when redis-server is not
// installed. Under REDSTATE_REQUIRE_REDIS=1 a missing redis-server fails the test binary, as
// it fails a test; a server that is installed but does not start fails it in any case.
func MainWithStandalone(m *testing.M, use func(addr string)) {
	os.Exit(RunWithStandalone(m, use))
}

// RunWithStandalone is MainWithStandalone returning the exit code instead of exiting, for a
// TestMain that has more to stop afterwards (sqltest.Stop):
//
//	code := redistest.RunWithStandalone(m, func(addr string) { redisAddr = addr })
//	sqltest.Stop()
//	os.Exit(code)
func RunWithStandalone(m *testing.M, use func(addr string)) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	defer stopShared()
	addr, skipped, err := exampleServer()
	if err != nil {
		fmt.Fprintf(os.Stderr, "redistest: %v\n", err)
		return 1
	}
	if skipped != "" {
		if err := skipExamples(); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: leaving the examples out: %v\n", err)
			return 1
		}
		if testing.Verbose() {
			fmt.Printf("redistest: examples left out: %s\n", skipped)
		}
	} else {
		use(addr)
	}
	return m.Run()
}

// exampleServer starts the shared standalone server and returns its address, or why the
// examples are to be left out (skipped), or an error when their absence must fail the run.
func exampleServer() (addr, skipped string, err error) {
	if testing.Short() {
		return "", "they need redis-server, and -short runs no Redis tests", nil
	}
	bin, err := findServer()
	if err != nil {
		if serverRequired() {
			return "", "", errors.New(serverNotFound + " (REDSTATE_REQUIRE_REDIS=1)")
		}
		return "", serverNotFound, nil
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if err := runSharedStandalone(bin); err != nil {
		return "", "", err
	}
	return shared.standalone.Addr, "", nil
}

// skipExamples adds ^Example to -test.skip, keeping what it already skips.
func skipExamples() error {
	pattern := "^Example"
	if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
		pattern = f.Value.String() + "|" + pattern
	}
	return flag.Set("test.skip", pattern)
}
