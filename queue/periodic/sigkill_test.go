package periodic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/periodic"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// Helper-process protocol of TestScheduler_SIGKILLedLeaderProcess: the parent re-executes this
// test binary with -test.run=^TestHelperPeriodicScheduler$ and these variables; without
// schedulerAddrEnv the helper test does nothing.
const (
	schedulerAddrEnv = "REDSTATE_PERIODIC_HELPER_ADDR" // redis-server address
	schedulerNSEnv   = "REDSTATE_PERIODIC_HELPER_NS"   // key namespace
	schedulerLogEnv  = "REDSTATE_PERIODIC_HELPER_LOG"  // the scheduler's JSON log file

	procInstances = 3
	procLeaseTTL  = 2 * time.Second
	procEntry     = "every-second"
)

// TestScheduler_SIGKILLedLeaderProcess: three scheduler processes on one redis-server run an
// "@every 1s" entry with a 2 s lease. Once the leader has fired a few ticks it is SIGKILLed
// (lease not released); a survivor takes over and fires more. Then every process is killed and
// the queue is read: every tick is exactly one job (one pending entry and one record per tick
// id), and every tick without a job lies in a catch-up gap a leader logged at Warn
// (first_missed … firing): between the first and the last job no tick is lost otherwise (the
// gap is often empty: a takeover within a tick of the lease's expiry fires that tick late). The
// assertions are on tick ids and logs, not on timing: an extra takeover on a loaded machine
// (a renewal too late) must obey the same rules.
func TestScheduler_SIGKILLedLeaderProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process scheduler takeover takes ~10 s")
	}
	srv := redistest.StartStandalone(t)
	ns := uniqueNS()
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, procInstances)
	logs := make([]string, procInstances)
	for i := range cmds {
		logs[i] = filepath.Join(dir, fmt.Sprintf("scheduler-%d.log", i))
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperPeriodicScheduler$", "-test.count=1")
		cmd.Env = append(os.Environ(), schedulerAddrEnv+"="+srv.Addr, schedulerNSEnv+"="+ns, schedulerLogEnv+"="+logs[i])
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cmds[i] = cmd
	}

	// The leader: the process that logged the largest fence, once it fired 3 ticks under it.
	var killed int
	var killedFence int64
	awaitLogs(t, logs, "a leader firing 3 ticks", func(ls [][]logLine) bool {
		killed, killedFence = currentLeader(ls)
		return killedFence > 0 && enqueuedUnder(ls[killed], killedFence) >= 3
	})
	sigkill(t, cmds[killed])
	t.Logf("SIGKILLed process %d, leader with fence %d", killed, killedFence)
	awaitLogs(t, logs, "a survivor taking over and firing 3 ticks", func(ls [][]logLine) bool {
		p, f := currentLeader(ls)
		return f > killedFence && enqueuedUnder(ls[p], f) >= 3
	})
	for i, cmd := range cmds {
		if i != killed {
			sigkill(t, cmd)
		}
	}

	b, err := redisqueue.New(srv.Client(t), redisqueue.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]int{}
	if _, err := b.HasJob(context.Background(), testQueue, func(m queue.Message) bool {
		entries[m.JobID]++
		return false
	}); err != nil {
		t.Fatal(err)
	}
	records := map[string]bool{}
	for cursor := ""; ; {
		jobs, next, err := b.Jobs(context.Background(), testQueue, queue.StatePending, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			records[j.ID] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	var ticks []int64
	for id, n := range entries {
		if n != 1 || !records[id] {
			t.Errorf("job %s: %d pending entries, record %v; want one of each", id, n, records[id])
		}
		at, ok := strings.CutPrefix(id, "cron:"+procEntry+":")
		sec, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil {
			t.Fatalf("job id %q is not a tick id of %s", id, procEntry)
		}
		ticks = append(ticks, sec)
	}
	if len(records) != len(entries) {
		t.Errorf("%d pending records for %d pending entries", len(records), len(entries))
	}
	slices.Sort(ticks)

	// Every gap between two jobs' ticks must be a catch-up a leader logged.
	ls := readLogs(t, logs)
	gaps := map[[2]int64]bool{}
	for _, l := range slices.Concat(ls...) {
		if l.Msg == "periodic ticks missed while no instance led; firing only the latest" {
			gaps[[2]int64{l.FirstMissed.Unix(), l.Firing.Unix()}] = true
		}
	}
	missed := 0
	for i := 1; i < len(ticks); i++ {
		if ticks[i]-ticks[i-1] == 1 {
			continue
		}
		if !gaps[[2]int64{ticks[i-1] + 1, ticks[i]}] {
			t.Errorf("ticks %d..%d have no job and no leader logged skipping them (logged gaps %v; jobs %v)", ticks[i-1]+1, ticks[i]-1, gaps, ticks)
		}
		missed += int(ticks[i] - ticks[i-1] - 1)
	}
	t.Logf("%d ticks %d..%d, each one job with a record; %d ticks skipped in logged catch-up gaps %v", len(ticks), ticks[0], ticks[len(ticks)-1], missed, gaps)
}

// logLine is the part of a scheduler's JSON log line the test reads.
type logLine struct {
	Msg         string    `json:"msg"`
	Fence       int64     `json:"fence"`
	FirstMissed time.Time `json:"first_missed"`
	Firing      time.Time `json:"firing"`
}

// readLogs reads each process's log; a line cut by a SIGKILL (no newline) is left out.
func readLogs(t *testing.T, paths []string) [][]logLine {
	t.Helper()
	out := make([][]logLine, len(paths))
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for raw := range strings.Lines(string(data)) {
			if !strings.HasSuffix(raw, "\n") {
				break
			}
			var l logLine
			if err := json.Unmarshal([]byte(raw), &l); err != nil {
				t.Fatalf("%s: %q: %v", p, raw, err)
			}
			out[i] = append(out[i], l)
		}
	}
	return out
}

// awaitLogs polls the logs until ok holds of them.
func awaitLogs(t *testing.T, paths []string, what string, ok func([][]logLine) bool) {
	t.Helper()
	deadline := time.Now().Add(3 * waitFor)
	for !ok(readLogs(t, paths)) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, 3*waitFor)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// currentLeader returns the process that logged leading with the largest fence (0: none).
func currentLeader(ls [][]logLine) (proc int, fence int64) {
	for p, lines := range ls {
		for _, l := range lines {
			if l.Msg == "periodic scheduler leading" && l.Fence > fence {
				proc, fence = p, l.Fence
			}
		}
	}
	return proc, fence
}

// enqueuedUnder counts the jobs a process logged enqueued with fence.
func enqueuedUnder(lines []logLine, fence int64) int {
	n := 0
	for _, l := range lines {
		if l.Msg == "periodic job enqueued" && l.Fence == fence {
			n++
		}
	}
	return n
}

// sigkill kills cmd's process with SIGKILL and checks it died of it.
func sigkill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("scheduler process: %v, want killed", err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("scheduler process ended with %v, want SIGKILL", err)
	}
}

// TestHelperPeriodicScheduler is the body of the scheduler processes of
// TestScheduler_SIGKILLedLeaderProcess; run directly (without its variables) it does nothing.
// It runs until killed (at most two minutes, should its parent vanish).
func TestHelperPeriodicScheduler(t *testing.T) {
	addr := os.Getenv(schedulerAddrEnv)
	if addr == "" {
		return
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ns := os.Getenv(schedulerNSEnv)
	keys := periodic.NewKeys(redstate.Prefix(ns, ""))
	b, err := redisqueue.New(c, redisqueue.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := lease.NewRedis(c, lease.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := queue.ParseCron("@every 1s", "")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(os.Getenv(schedulerLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := periodic.New(periodic.Options{
		Entries:  []periodic.Entry{{Name: procEntry, Schedule: sched, Queue: testQueue, Payload: json.RawMessage(`{"report":"hourly"}`)}},
		Store:    redisStore(t, c, keys),
		Leases:   leases,
		Keys:     keys,
		Enqueuer: periodic.BrokerEnqueuer{Broker: b},
		LeaseTTL: procLeaseTTL,
		Logger:   slog.New(slog.NewJSONHandler(f, nil)), // one write(2) per line, unbuffered
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
}
