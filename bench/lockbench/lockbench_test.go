package lockbench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
)

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	ms := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (Measurements, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond})
	})
	if len(ms) != 2 || ms[0].Name != "lock.cycle" || ms[1].Name != "lock.contended" {
		t.Fatalf("got %+v", ms)
	}
	for _, m := range ms {
		if m.Ours.Ops == 0 || m.Baseline.Ops == 0 || !strings.HasPrefix(m.ResultLine(), "RESULT "+m.Name+" ours=") {
			t.Errorf("%s: ours=%d baseline=%d line %q", m.Name, m.Ours.Ops, m.Baseline.Ops, m.ResultLine())
		}
	}
	if ms[0].OursBusy != 0 || ms[0].BaselineBusy != 0 {
		t.Errorf("uncontended mode saw busy locks: %d %d", ms[0].OursBusy, ms[0].BaselineBusy)
	}
}

// TestRun_DirectLocks: the bench also runs ours with each script alone on the client.
func TestRun_DirectLocks(t *testing.T) {
	ms := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (Measurements, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond, DirectLocks: true})
	})
	if len(ms) != 2 || ms[0].Ours.Ops == 0 || ms[1].Ours.Ops == 0 {
		t.Fatalf("got %+v", ms)
	}
}

// TestRun_CallerCounts: a list of caller counts measures both modes at each, and every line
// carries the server's cost per attempt of each side.
func TestRun_CallerCounts(t *testing.T) {
	ms := benchtest.Smoke(t, 4, func(ctx context.Context, target bench.Target) (Measurements, error) {
		return Run(ctx, Options{Target: target, Duration: 200 * time.Millisecond, Callers: []int{2, 5}})
	})
	if len(ms) != 4 {
		t.Fatalf("got %d measurements, want 4", len(ms))
	}
	for i, want := range []struct {
		name    string
		callers int
	}{{"lock.cycle", 2}, {"lock.contended", 2}, {"lock.cycle", 5}, {"lock.contended", 5}} {
		m := ms[i]
		if m.Name != want.name || m.Callers != want.callers {
			t.Fatalf("measurement %d = %s at %d callers, want %s at %d", i, m.Name, m.Callers, want.name, want.callers)
		}
		if !strings.Contains(m.ResultLine(), " clients="+strconv.Itoa(want.callers)+" server_us=") {
			t.Errorf("line %q", m.ResultLine())
		}
		// Both sides run only scripts: each attempt is at least one EVALSHA on the server.
		for side, c := range map[string]bench.SideCost{"ours": m.OursServer, "redislock": m.BaselineServer} {
			if c.CPU <= 0 || c.Commands["evalsha"].Calls == 0 {
				t.Errorf("%s %s: server cost %+v", m.Name, side, c)
			}
		}
		if m.OursServer.Commands["evalsha"].Calls < m.OursAttempts() {
			t.Errorf("%s: %d EVALSHA for %d attempts", m.Name, m.OursServer.Commands["evalsha"].Calls, m.OursAttempts())
		}
	}
}

// TestRun_RejectsCallerCountZero: a caller count that is not positive fails before any call.
func TestRun_RejectsCallerCountZero(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	if _, err := Run(context.Background(), Options{Target: bench.Target{Client: client}, Callers: []int{16, 0}}); err == nil {
		t.Error("a caller count of 0 was accepted")
	}
}
