package redisstate_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/executor/statetest"
	"github.com/redstate/redstate/redistest"
)

// scriptHook records how many script calls (EVALSHA, EVAL) each dispatch of the client carries
// and holds the first such dispatch until release is closed.
type scriptHook struct {
	entered, release chan struct{}
	first            atomic.Bool
	done             atomic.Int64 // dispatches that returned

	mu      sync.Mutex
	largest int // most script calls in one dispatch
}

func newScriptHook() *scriptHook {
	return &scriptHook{entered: make(chan struct{}), release: make(chan struct{})}
}

// DialHook implements redis.Hook.
func (h *scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (h *scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		defer h.seen(scripts(cmd))()
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (h *scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		defer h.seen(scripts(cmds...))()
		return next(ctx, cmds)
	}
}

// seen records a dispatch of n scripts, holding the first one; the returned function counts it
// as done.
func (h *scriptHook) seen(n int) func() {
	if n == 0 {
		return func() {}
	}
	h.mu.Lock()
	h.largest = max(h.largest, n)
	h.mu.Unlock()
	if h.first.CompareAndSwap(false, true) {
		close(h.entered)
		<-h.release
	}
	return func() { h.done.Add(1) }
}

func scripts(cmds ...redis.Cmder) int {
	n := 0
	for _, c := range cmds {
		if c.Name() == "evalsha" || c.Name() == "eval" {
			n++
		}
	}
	return n
}

// concurrentAcquires runs callers TryAcquires of one tenant (one key, one Cluster slot) on a
// fresh client of topology with h installed, while h holds the first script dispatch: the
// others queue behind it in the autopipeliner, or go to Redis one by one on the client. It
// returns the most script calls one dispatch carried.
func concurrentAcquires(t *testing.T, client redis.UniversalClient, o redisstate.Options, callers int) int {
	ctx := context.Background()
	locks := must(redisstate.NewLocks(client, o))(t)
	ap := must(client.AutoPipeline())(t) // the instance Locks uses (the client caches it)
	// Load the scripts on the tenant's node first, so no NOSCRIPT retry joins the batch.
	l, ok, err := locks.TryAcquire(ctx, "tenant-batch", "task", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first acquire = %v, %v", ok, err)
	}
	if err := locks.Release(ctx, "tenant-batch", l.Token); err != nil {
		t.Fatal(err)
	}
	h := newScriptHook()
	client.AddHook(h)
	acquire := func() {
		if _, _, err := locks.TryAcquire(ctx, "tenant-batch", "task", time.Minute); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(acquire)
	<-h.entered
	for range callers - 1 {
		wg.Go(acquire)
	}
	// Until the others are queued in the autopipeliner, or went to Redis without it.
	for ap.Len() < callers-1 && h.done.Load() < int64(callers-1) {
		runtime.Gosched()
	}
	close(h.release)
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.largest
}

// TestLocks_BatchedScriptsShareOnePipeline: with BatchedLocks the scripts of concurrent
// callers reach Redis in one pipeline (one write, one read) through the client's half-duplex
// autopipeliner, on a standalone server and on Cluster; with DirectLocks each goes alone.
func TestLocks_BatchedScriptsShareOnePipeline(t *testing.T) {
	const callers = 8
	for _, tc := range redistest.Topologies() {
		t.Run(tc.Name, func(t *testing.T) {
			o := opts(0)
			o.BatchedLocks = true
			if got := concurrentAcquires(t, tc.Client(t), o, callers); got < callers-1 {
				t.Errorf("batched: at most %d scripts in one dispatch; want the %d queued behind the first", got, callers-1)
			}
			o = opts(0)
			o.DirectLocks = true
			if got := concurrentAcquires(t, tc.Client(t), o, callers); got != 1 {
				t.Errorf("DirectLocks: %d scripts in one dispatch; want each alone", got)
			}
		})
	}
}

// TestLocks_StreamedCallsShareOneConnection: by default the lock calls of many concurrent
// callers are streamed on one held connection (the full-duplex autopipeliner), where DirectLocks
// takes a pooled connection per concurrent call.
func TestLocks_StreamedCallsShareOneConnection(t *testing.T) {
	const callers, cycles = 32, 20
	srv := redistest.StartStandalone(t)
	connections := func(o redisstate.Options) int {
		client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: callers})
		t.Cleanup(func() { _ = client.Close() })
		locks := must(redisstate.NewLocks(client, o))(t)
		before := receivedConnections(t, client)
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				tenant := fmt.Sprintf("tenant-%d", c)
				for range cycles {
					l, ok, err := locks.TryAcquire(context.Background(), tenant, "task", time.Minute)
					if err != nil || !ok {
						t.Errorf("acquire %s = %v, %v", tenant, ok, err)
						return
					}
					if err := locks.Release(context.Background(), tenant, l.Token); err != nil {
						t.Errorf("release %s: %v", tenant, err)
						return
					}
				}
			})
		}
		wg.Wait()
		return receivedConnections(t, client) - before
	}
	// The INFO call itself may open the client's first pooled connection; the stream holds one.
	if got := connections(opts(0)); got > 2 {
		t.Errorf("streamed: %d connections opened for %d concurrent callers; want the one held connection", got, callers)
	}
	direct := opts(0)
	direct.DirectLocks = true
	if got := connections(direct); got < 4 {
		t.Errorf("DirectLocks: %d connections opened for %d concurrent callers; want one per concurrent call", got, callers)
	}
}

// receivedConnections returns the server's total_connections_received.
func receivedConnections(t *testing.T, client *redis.Client) int {
	t.Helper()
	info, err := client.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_connections_received")
	return 0
}

// TestLocks_ScriptCacheFlushed: after SCRIPT FLUSH (a restarted or failed-over server has no
// scripts) every lock call still works: go-redis's EVALSHA-then-EVAL fallback runs through the
// autopipeliner.
func TestLocks_ScriptCacheFlushed(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		locks := must(redisstate.NewLocks(client, opts(0)))(t)
		cycle := func(what string) {
			t.Helper()
			l, ok, err := locks.TryAcquire(ctx, "tenant-noscript", "task", time.Minute)
			if err != nil || !ok {
				t.Fatalf("%s: acquire = %v, %v", what, ok, err)
			}
			if err := client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := locks.Renew(ctx, "tenant-noscript", l.Token, time.Minute); err != nil {
				t.Fatalf("%s: renew: %v", what, err)
			}
			if err := client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := locks.Release(ctx, "tenant-noscript", l.Token); err != nil {
				t.Fatalf("%s: release: %v", what, err)
			}
			if err := client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		cycle("scripts loaded")
		cycle("scripts flushed before each call")
	})
}

// TestLocks_DoneContextFailsAtOnce: a call with a context already done fails with EUNAVAILABLE
// and sends nothing, as on the client (the autopipeliner alone would run it on its own
// context and take the lock).
func TestLocks_DoneContextFailsAtOnce(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		locks := must(redisstate.NewLocks(client, opts(0)))(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, ok, err := locks.TryAcquire(ctx, "tenant-done", "task", time.Minute); !redstate.IsCode(err, redstate.EUNAVAILABLE) || ok {
			t.Fatalf("acquire with a done context = %v, %v; want EUNAVAILABLE", ok, err)
		}
		if held, err := locks.Exists(context.Background(), "tenant-done"); err != nil || held {
			t.Fatalf("lock held after a call with a done context: %v, %v", held, err)
		}
		token := executor.NewLockToken("task")
		if err := locks.Renew(ctx, "tenant-done", token, time.Minute); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("renew with a done context = %v; want EUNAVAILABLE", err)
		}
		if err := locks.Release(ctx, "tenant-done", token); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Fatalf("release with a done context = %v; want EUNAVAILABLE", err)
		}
	})
}

// TestLocks_ErrorsThroughTheAutopipeliner: replies and transport failures map to the same
// codes as on the client: an unexpected reply (WRONGTYPE) is EINTERNAL, a "not now" reply
// (OOM) and an unreachable server are EUNAVAILABLE.
func TestLocks_ErrorsThroughTheAutopipeliner(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	o := opts(0)
	locks := must(redisstate.NewLocks(client, o))(t)
	token := executor.NewLockToken("task")

	if err := client.HSet(ctx, o.Keys.TenantLock("tenant-hash"), "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := locks.Release(ctx, "tenant-hash", token); !redstate.IsCode(err, redstate.EINTERNAL) {
		t.Errorf("release of a lock key holding a hash = %v; want EINTERNAL", err)
	}

	if err := client.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	_, _, err := locks.TryAcquire(ctx, "tenant-oom", "task", time.Minute)
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Errorf("acquire on a server out of memory = %v; want EUNAVAILABLE", err)
	}
	if err := client.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}

	down := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	downLocks := must(redisstate.NewLocks(down, o))(t)
	srv.Kill(t)
	if _, _, err := downLocks.TryAcquire(ctx, "tenant-down", "task", time.Minute); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Errorf("acquire with the server down = %v; want EUNAVAILABLE", err)
	}
	if err := downLocks.Release(ctx, "tenant-down", token); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Errorf("release with the server down = %v; want EUNAVAILABLE", err)
	}
}

// TestLocks_Sentinel: the lock contract holds on a Sentinel failover client (a *redis.Client
// whose autopipeliner follows the master the sentinels report).
func TestLocks_Sentinel(t *testing.T) {
	client := redistest.StartSentinel(t).Client(t)
	statetest.RunLockSuite(t, func(t *testing.T) executor.TenantLocks {
		return must(redisstate.NewLocks(client, opts(0)))(t)
	}, statetest.Features{})
}
