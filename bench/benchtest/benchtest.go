// Package benchtest runs the benches' smoke tests: a short run on a real redis-server.
package benchtest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/redistest"
)

// Smoke runs a bench on a fresh standalone redis-server with clients callers (skipping the
// test under -short) and returns what it measured. It fails t when the run fails, and
// reports (Errorf) a run that did not report its cleanup or left keys behind.
func Smoke[R any](t *testing.T, clients int, run func(ctx context.Context, target bench.Target) (R, error)) R {
	t.Helper()
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	client := redistest.StartStandalone(t).Client(t)
	return Check(t, client, clients, run)
}

// Check is Smoke on client, which must hold no keys before.
func Check[R any](t *testing.T, client redis.UniversalClient, clients int, run func(ctx context.Context, target bench.Target) (R, error)) R {
	t.Helper()
	var progress bytes.Buffer
	out, err := run(context.Background(), bench.Target{Client: client, Clients: clients, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "cleanup: unlinked") {
		t.Errorf("progress lacks the cleanup line:\n%s", progress.String())
	}
	if n := client.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys left after cleanup", n)
	}
	return out
}
