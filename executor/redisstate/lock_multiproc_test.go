package redisstate_test

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/redistest"
)

// Helper-process protocol: the parent re-executes this test binary with
// -test.run=^TestHelperLockContender$ and these variables; without helperModeEnv the helper
// test does nothing.
const (
	helperModeEnv   = "REDSTATE_LOCK_HELPER"     // "contend" or "hold"
	helperAddrEnv   = "REDSTATE_LOCK_REDIS_ADDR" // redis-server address
	helperNSEnv     = "REDSTATE_LOCK_NAMESPACE"  // key namespace
	helperLogEnv    = "REDSTATE_LOCK_LOG"        // contend: this process's log file
	helperStartEnv  = "REDSTATE_LOCK_START"      // contend: unix nanoseconds to start at
	helperEndEnv    = "REDSTATE_LOCK_END"        // contend: unix nanoseconds to stop at
	helperTenantEnv = "REDSTATE_LOCK_TENANT"     // hold: the tenant to hold
	helperTTLEnv    = "REDSTATE_LOCK_TTL"        // hold: lease TTL (time.Duration)

	mpProcesses  = 3
	mpGoroutines = 4
	mpTenants    = 20
	mpContention = 8 * time.Second
	mpKillTTL    = 2 * time.Second
)

// TestLockSafety_MultiProcess proves the tenant lock safe across processes. 3 processes × 4
// goroutines contend for 20 tenants on one redis-server; every holder appends
// "tenant fence enter|exit unixnano" to its process's log (O_APPEND, one write per line; enter
// is stamped after TryAcquire returned, exit before Release is sent, so the logged interval lies
// inside the real one). The merged logs must show, per tenant, no two holding intervals
// overlapping and fences strictly increasing in acquisition order. Then a process holding a
// lock with a 2 s TTL is SIGKILLed: another acquirer must fail before the TTL and succeed after
// it, with a larger fence.
func TestLockSafety_MultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process lock safety takes ~11 s")
	}
	srv := redistest.StartStandalone(t)
	ns := "mp-executor"
	dir := t.TempDir()

	t.Run("Contention", func(t *testing.T) {
		start := time.Now().Add(500 * time.Millisecond)
		end := start.Add(mpContention)
		ctx, cancel := context.WithDeadline(t.Context(), end.Add(30*time.Second))
		defer cancel()
		var (
			wg   sync.WaitGroup
			logs = make([]string, mpProcesses)
			outs = make([]string, mpProcesses)
			errs = make([]error, mpProcesses)
		)
		for p := range mpProcesses {
			logs[p] = filepath.Join(dir, fmt.Sprintf("contender-%d.log", p))
			cmd := helperCommand(ctx, "contend", srv.Addr, ns,
				helperLogEnv+"="+logs[p],
				helperStartEnv+"="+strconv.FormatInt(start.UnixNano(), 10),
				helperEndEnv+"="+strconv.FormatInt(end.UnixNano(), 10))
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := cmd.CombinedOutput()
				outs[p], errs[p] = string(out), err
			}()
		}
		wg.Wait()
		for p := range mpProcesses {
			if errs[p] != nil {
				t.Fatalf("contender process %d: %v\n%s", p, errs[p], outs[p])
			}
			t.Logf("process %d: %s", p, statsLine(outs[p]))
		}
		checkLockLogs(t, logs)
	})

	t.Run("SIGKILLedHolderLosesLockAfterTTL", func(t *testing.T) {
		ctx := t.Context()
		tenant := "tenant-killed"
		cmd := helperCommand(ctx, "hold", srv.Addr, ns,
			helperTenantEnv+"="+tenant, helperTTLEnv+"="+mpKillTTL.String())
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// The holder prints "HELD <fence> <unixnano the acquire was sent>" once it holds the lock.
		lines := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "HELD ") {
					lines <- sc.Text()
					break
				}
			}
			close(lines)
		}()
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("holder process exited without holding the lock\n%s", stderr.String())
			}
			line = l
		case <-time.After(20 * time.Second):
			t.Fatalf("holder process did not report the lock\n%s", stderr.String())
		}
		var heldFence, sentNano int64
		if _, err := fmt.Sscanf(line, "HELD %d %d", &heldFence, &sentNano); err != nil {
			t.Fatalf("holder line %q: %v", line, err)
		}
		sent := time.Unix(0, sentNano)
		// The lease ends no earlier than sent+TTL (Redis runs on this machine's clock; 5 ms for
		// its millisecond resolution).
		expires := sent.Add(mpKillTTL - 5*time.Millisecond)

		client := srv.Client(t)
		locks := must(redisstate.NewLocks(client, redisstate.Options{Keys: executor.MustKeys(redstate.Prefix("", ns))}))(t)
		tryAcquire := func(what string) (executor.Lease, bool) {
			t.Helper()
			lease, ok, err := locks.TryAcquire(ctx, tenant, "successor", time.Minute)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if ok && time.Now().Before(expires) {
				t.Fatalf("%s: acquired %s %v after the holder's acquire, before its %v TTL (fence %d, holder's %d)",
					what, tenant, time.Since(sent), mpKillTTL, lease.Fence, heldFence)
			}
			return lease, ok
		}
		if _, ok := tryAcquire("acquire while the holder lives"); ok {
			t.Fatal("acquired a lock held by a live process")
		}

		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("holder process: %v, want killed", err)
		}
		if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("holder process ended with %v, want SIGKILL", err)
		}
		killedAt := time.Now()
		if killedAt.After(expires) {
			t.Fatalf("holder killed %v after its acquire, past the %v TTL: the test machine is too slow", killedAt.Sub(sent), mpKillTTL)
		}
		// The dead holder's lease outlives it...
		if held, err := locks.Exists(ctx, tenant); err != nil || !held {
			t.Fatalf("lock gone right after the holder died: exists=%v err=%v", held, err)
		}
		attempts := 0
		for {
			attempts++
			lease, ok := tryAcquire("acquire after SIGKILL")
			if ok {
				if lease.Fence <= heldFence {
					t.Fatalf("successor fence %d, not above the killed holder's %d", lease.Fence, heldFence)
				}
				after := time.Since(sent)
				t.Logf("SIGKILLed holder (fence %d) lost %s after %v (TTL %v); %d failed attempts after the kill; successor fence %d",
					heldFence, tenant, after.Round(time.Millisecond), mpKillTTL, attempts-1, lease.Fence)
				if after > mpKillTTL+2*time.Second {
					t.Fatalf("lock freed only %v after the acquire, TTL %v", after, mpKillTTL)
				}
				if err := locks.Release(ctx, tenant, lease.Token); err != nil {
					t.Fatal(err)
				}
				return
			}
			if time.Since(sent) > mpKillTTL+5*time.Second {
				t.Fatalf("lock of the killed holder still held %v after its acquire (TTL %v)", time.Since(sent), mpKillTTL)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// helperCommand re-executes the test binary as a helper process in mode.
func helperCommand(ctx context.Context, mode, addr, ns string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperLockContender$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperAddrEnv+"="+addr, helperNSEnv+"="+ns)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// statsLine returns the helper's "STATS ..." line.
func statsLine(out string) string {
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "STATS ") {
			return strings.TrimSpace(l)
		}
	}
	return "(no STATS line)"
}

// holding is one logged lock holding.
type holding struct {
	tenant      string
	fence       int64
	enter, exit int64 // unix nanoseconds
	proc        int
	line        int
}

// checkLockLogs merges the contenders' logs and fails t on any overlap, non-increasing fence,
// unpaired line or too little cross-process contention.
func checkLockLogs(t *testing.T, logs []string) {
	t.Helper()
	perTenant := map[string][]*holding{}
	seen := map[string]*holding{} // tenant+fence -> holding
	for p, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("log of process %d: %v", p, err)
		}
		n := 0
		for raw := range strings.Lines(string(data)) {
			n++
			f := strings.Fields(raw)
			if len(f) != 4 || !strings.HasSuffix(raw, "\n") {
				t.Fatalf("%s:%d: malformed line %q", path, n, raw)
			}
			fence, err1 := strconv.ParseInt(f[1], 10, 64)
			at, err2 := strconv.ParseInt(f[3], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s:%d: malformed line %q", path, n, raw)
			}
			key := f[0] + " " + f[1]
			switch f[2] {
			case "enter":
				if prev := seen[key]; prev != nil {
					t.Fatalf("%s:%d: fence %d of %s handed out twice (also process %d line %d)", path, n, fence, f[0], prev.proc, prev.line)
				}
				h := &holding{tenant: f[0], fence: fence, enter: at, exit: -1, proc: p, line: n}
				seen[key] = h
				perTenant[f[0]] = append(perTenant[f[0]], h)
			case "exit":
				h := seen[key]
				if h == nil || h.proc != p || h.exit != -1 || at < h.enter {
					t.Fatalf("%s:%d: exit without a matching enter: %q", path, n, raw)
				}
				h.exit = at
			default:
				t.Fatalf("%s:%d: malformed line %q", path, n, raw)
			}
		}
	}
	total, handovers := 0, 0
	perProc := make([]int, len(logs))
	for tenant, hs := range perTenant {
		slices.SortFunc(hs, func(a, b *holding) int { return cmp.Compare(a.enter, b.enter) })
		for i, h := range hs {
			if h.exit == -1 {
				t.Fatalf("%s fence %d (process %d line %d) entered but never left", tenant, h.fence, h.proc, h.line)
			}
			perProc[h.proc]++
			if i == 0 {
				continue
			}
			prev := hs[i-1]
			if h.enter < prev.exit {
				t.Fatalf("%s held twice at once: fence %d by process %d [%d, %d] and fence %d by process %d [%d, %d] overlap by %v",
					tenant, prev.fence, prev.proc, prev.enter, prev.exit, h.fence, h.proc, h.enter, h.exit, time.Duration(prev.exit-h.enter))
			}
			if h.fence <= prev.fence {
				t.Fatalf("%s: fence %d (process %d) acquired after fence %d (process %d)", tenant, h.fence, h.proc, prev.fence, prev.proc)
			}
			if h.proc != prev.proc {
				handovers++
			}
		}
		total += len(hs)
	}
	if len(perTenant) != mpTenants {
		t.Fatalf("only %d of %d tenants were ever locked", len(perTenant), mpTenants)
	}
	for p, n := range perProc {
		if n < 100 {
			t.Fatalf("process %d held only %d locks: not enough contention", p, n)
		}
	}
	if handovers < 100 {
		t.Fatalf("only %d handovers of a tenant between processes", handovers)
	}
	t.Logf("%d holdings of %d tenants by %d processes × %d goroutines (per process %v), %d cross-process handovers: no overlap, fences strictly increasing",
		total, len(perTenant), len(logs), mpGoroutines, perProc, handovers)
}

// TestHelperLockContender is the body of the helper processes of TestLockSafety_MultiProcess;
// run directly (without REDSTATE_LOCK_HELPER) it does nothing.
func TestHelperLockContender(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		return
	}
	keys := executor.MustKeys(redstate.Prefix("", os.Getenv(helperNSEnv)))
	newLocks := func() *redisstate.Locks {
		c := redis.NewClient(&redis.Options{Addr: os.Getenv(helperAddrEnv)})
		t.Cleanup(func() { _ = c.Close() })
		return must(redisstate.NewLocks(c, redisstate.Options{Keys: keys}))(t)
	}
	switch mode {
	case "contend":
		helperContend(t, newLocks)
	case "hold":
		ttl, err := time.ParseDuration(os.Getenv(helperTTLEnv))
		if err != nil {
			t.Fatal(err)
		}
		locks, tenant := newLocks(), os.Getenv(helperTenantEnv)
		for {
			sent := time.Now()
			lease, ok, err := locks.TryAcquire(t.Context(), tenant, fmt.Sprintf("holder-%d", os.Getpid()), ttl)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				fmt.Printf("HELD %d %d\n", lease.Fence, sent.UnixNano())
				time.Sleep(time.Hour) // hold until SIGKILLed
			}
			time.Sleep(10 * time.Millisecond)
		}
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
}

func helperContend(t *testing.T, newLocks func() *redisstate.Locks) {
	envTime := func(name string) time.Time {
		n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return time.Unix(0, n)
	}
	start, end := envTime(helperStartEnv), envTime(helperEndEnv)
	f, err := os.OpenFile(os.Getenv(helperLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	logLine := func(tenant string, fence int64, what string) {
		// One write(2) per line on an O_APPEND file: lines of concurrent holders never mix.
		line := tenant + " " + strconv.FormatInt(fence, 10) + " " + what + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n"
		if _, err := f.Write([]byte(line)); err != nil {
			t.Errorf("log: %v", err)
		}
	}
	time.Sleep(time.Until(start))
	var (
		wg                         sync.WaitGroup
		mu                         sync.Mutex
		acquired, busy, unavailErr int
	)
	owner := fmt.Sprintf("proc-%d", os.Getpid())
	for g := range mpGoroutines {
		locks := newLocks()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.WithoutCancel(t.Context())
			var a, b, u int
			for time.Now().Before(end) {
				tenant := fmt.Sprintf("tenant-%02d", rand.IntN(mpTenants))
				lease, ok, err := locks.TryAcquire(ctx, tenant, fmt.Sprintf("%s-g%d", owner, g), 10*time.Second)
				if err != nil {
					u++
					continue
				}
				if !ok {
					b++
					continue
				}
				a++
				logLine(tenant, lease.Fence, "enter")
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				logLine(tenant, lease.Fence, "exit")
				if err := locks.Release(ctx, tenant, lease.Token); err != nil {
					t.Errorf("release %s fence %d: %v", tenant, lease.Fence, err)
					return
				}
			}
			mu.Lock()
			acquired, busy, unavailErr = acquired+a, busy+b, unavailErr+u
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("STATS pid=%d acquired=%d busy=%d errors=%d\n", os.Getpid(), acquired, busy, unavailErr)
	if unavailErr > 0 {
		t.Errorf("%d acquire errors", unavailErr)
	}
}
