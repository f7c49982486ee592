package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/report"
)

// Crash test parameters (no job is lost when a worker dies): 5,000 jobs, the worker process is
// SIGKILLed mid-run and a new one takes over.
const (
	crashJobs       = 5000
	crashFirstID    = 100001 // record ids crashFirstID .. crashFirstID+crashJobs-1
	crashSubmitters = 8
	// crashKillAfter is how many records must be done (status 4) before the kill.
	crashKillAfter = crashJobs / 5

	// Jobs with records on a webhook queue beside the report flow: crashMailJobs jobs with ids
	// mail-<i>, every 4th delayed 1..20 s (some fall due before the kill, some after it), every
	// 50th delayed an hour (still scheduled at the end); the webhook takes crashMailHookDelay per
	// call, so at 4 calls at a time the kill finds them done, running, pending and scheduled.
	crashMailQueue     = "mail:queue"
	crashMailJobs      = 1000
	crashMailHookDelay = 40 * time.Millisecond
)

// TestQueueCrash_WorkerKilledMidRunRedeliversEveryJob runs the report flow on a real Redis
// (AOF, fsync always) with the real race-built binary: 5,000 records are submitted over HTTP;
// once some reports are done and others are still pending and running, the server is killed
// with SIGKILL and a new server process with the same configuration is started. Every record
// must end in status 4 (已完成). Each execution of the report generator logs "generating
// report" (Debug); counting those lines in both processes' logs shows that every job ran at
// least once, and that only jobs in flight at the kill ran twice (at-least-once delivery:
// the dead consumer's lease expires and its in-flight jobs are redelivered).
//
// The same processes also serve a webhook queue of jobs with records (caller ids, some
// delayed, enqueued over POST /v1/queues/{queue}/jobs before the reports): every accepted job
// ends done, or still scheduled when its time has not come, with its record; none is missing,
// dead or never delivered, and only jobs in flight at the kill were delivered twice.
func TestQueueCrash_WorkerKilledMidRunRedeliversEveryJob(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test with real processes: not under -short")
	}
	start := time.Now()
	rds := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	rc := rds.Client(t)
	ctx := context.Background()

	// A 20ms report keeps 8 consumers below ~400 jobs/s, so a backlog builds up while the
	// records are submitted and the kill finds jobs both pending and running. A 2s lease makes
	// the redelivery after the kill quick.
	t.Setenv("REDSTATE_REPORT_DELAY", "20ms")
	hook := newCountingWebhook(t, crashMailHookDelay)
	t.Setenv("REDSTATE_QUEUE_QUEUES", "[{name: report:queue, concurrency: 8, lease: 2s, block-timeout: 1s}, "+
		"{name: "+crashMailQueue+", handler: webhook, concurrency: 4, lease: 2s, block-timeout: 1s, webhook: {url: \""+hook.url+"\"}}]")
	t.Setenv("REDSTATE_QUEUE_RECONCILER_ENABLED", "false") // redelivery must come from the lease alone
	t.Setenv("REDSTATE_QUEUE_RECORD_STORE", "redis")       // the test reads the records from Redis
	args := []string{"--redis", rds.URL, "--log-level", "debug"}

	s1 := startServer(t, args...)
	mailKeys := queue.NewKeys(redstate.Prefix("", crashMailQueue), false)
	enqueueMailJobs(t, s1)
	submitAll(t, s1)
	t.Logf("submitted %d records over HTTP in %s", crashJobs, time.Since(start).Round(time.Millisecond))

	keys := queue.NewKeys(redstate.Prefix("", report.DefaultQueue), false)
	recKeys := report.NewKeys(redstate.KeyPrefix{}, false)
	done := func() int64 { return crashJobs - rc.ZCard(ctx, recKeys.Generating()).Val() }
	eventually(t, time.Minute, fmt.Sprintf("%d reports and some mail jobs done before the kill", crashKillAfter), func() bool {
		return done() >= crashKillAfter && rc.ZCard(ctx, mailKeys.JobIndexPrefix+string(queue.StateDone)).Val() > 0
	})
	pendingBefore := rc.LLen(ctx, keys.Pending).Val()
	if pendingBefore == 0 {
		t.Fatalf("every job was dequeued before the kill (done %d); the test needs a backlog", done())
	}
	s1.kill()
	killedAt := time.Now()

	// What the dead process left behind: its in-flight jobs (they must be redelivered).
	pending := rc.LLen(ctx, keys.Pending).Val()
	inFlight := map[int64]bool{}
	procKeys, err := rc.Keys(ctx, keys.Processing("*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range procKeys {
		for _, raw := range rc.LRange(ctx, k, 0, -1).Val() {
			m, err := queue.DecodeMessage([]byte(raw))
			if err != nil {
				t.Fatalf("in-flight message %q: %v", raw, err)
			}
			id, err := report.RecordIDOf(m)
			if err != nil {
				t.Fatalf("in-flight message %q: %v", raw, err)
			}
			inFlight[id] = true
		}
	}
	mailAtKill := map[queue.JobState]int64{}
	for _, st := range queue.JobStates {
		mailAtKill[st] = rc.ZCard(ctx, mailKeys.JobIndexPrefix+string(st)).Val()
	}
	mailInFlight := map[string]bool{}
	mailProcKeys, err := rc.Keys(ctx, mailKeys.Processing("*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range mailProcKeys {
		for _, raw := range rc.LRange(ctx, k, 0, -1).Val() {
			m, err := queue.DecodeMessage([]byte(raw))
			if err != nil {
				t.Fatalf("in-flight mail message %q: %v", raw, err)
			}
			mailInFlight[m.JobID] = true
		}
	}
	t.Logf("mail jobs at the kill: %v, %d in flight", mailAtKill, len(mailInFlight))
	if len(mailInFlight) == 0 || mailAtKill[queue.StateDone] >= crashMailJobs-crashMailJobs/50 {
		t.Fatalf("the kill found %d mail jobs in flight and %d done; want some in flight and some not done", len(mailInFlight), mailAtKill[queue.StateDone])
	}
	doneAtKill := done()
	t.Logf("SIGKILL after %s: %d done, %d pending, %d in flight (%d consumer lists)",
		time.Since(start).Round(time.Millisecond), doneAtKill, pending, len(inFlight), len(procKeys))
	if len(inFlight) == 0 || pending == 0 {
		t.Fatalf("the kill found %d jobs in flight and %d pending; want both > 0", len(inFlight), pending)
	}

	s2 := startServer(t, args...)
	mailDue := crashMailJobs - crashMailJobs/50 // every mail job but the ones delayed an hour
	eventually(t, 3*time.Minute, "every record in status 4 and every due mail job done", func() bool {
		return rc.ZCard(ctx, recKeys.Generating()).Val() == 0 &&
			rc.ZCard(ctx, mailKeys.JobIndexPrefix+string(queue.StateDone)).Val() >= int64(mailDue)
	})
	t.Logf("all records left status 3 %s after the kill", time.Since(killedAt).Round(time.Millisecond))

	// Every record is in status 4: one pipeline of HGETs.
	cmds, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range crashJobs {
			p.HGet(ctx, recKeys.Record(int64(crashFirstID+i)), "status")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	notDone := 0
	for i, c := range cmds {
		if st := c.(*redis.StringCmd).Val(); st != "4" {
			if notDone < 10 {
				t.Errorf("record %d: status %q, want 4", crashFirstID+i, st)
			}
			notDone++
		}
	}
	if notDone > 0 {
		t.Fatalf("%d of %d records are not in status 4", notDone, crashJobs)
	}
	if n := rc.LLen(ctx, keys.Dead).Val(); n != 0 {
		t.Fatalf("%d jobs were dead-lettered", n)
	}
	if n := rc.LLen(ctx, keys.Pending).Val(); n != 0 {
		t.Fatalf("%d jobs still pending after every record is done", n)
	}
	checkMailJobs(t, rc, mailKeys, hook, mailInFlight)
	s2.stop(t)

	// Runs per record, from both processes' "generating report" lines.
	runs1, runs2 := countRuns(t, s1.Logs()), countRuns(t, s2.Logs())
	twice, zero, maxRuns := 0, 0, 0
	for i := range crashJobs {
		id := int64(crashFirstID + i)
		n := runs1[id] + runs2[id]
		maxRuns = max(maxRuns, n)
		switch {
		case n == 0:
			if zero < 10 {
				t.Errorf("record %d is in status 4 but its report never ran", id)
			}
			zero++
		case n > 1:
			twice++
			if !inFlight[id] {
				t.Errorf("record %d ran %d times but was not in flight at the kill", id, n)
			}
		}
	}
	if len(runs1)+len(runs2) == 0 {
		t.Fatal(`no "generating report" log lines: is the per-run Debug line gone?`)
	}
	if zero > 0 {
		t.Fatalf("%d of %d jobs never ran", zero, crashJobs)
	}
	total1, total2 := sum(runs1), sum(runs2)
	t.Logf("runs: %d in the killed process, %d in the new one (%d in all, max %d per record)",
		total1, total2, total1+total2, maxRuns)
	t.Logf("%d of %d jobs ran twice (at-least-once: %d were in flight at the SIGKILL)", twice, crashJobs, len(inFlight))
	t.Logf("total test time %s", time.Since(start).Round(time.Millisecond))
}

// submitAll POSTs crashJobs records to /api/assessment/submit from crashSubmitters goroutines.
func submitAll(t *testing.T, s *server) {
	t.Helper()
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: crashSubmitters},
	}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, crashSubmitters)
	for range crashSubmitters {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= crashJobs {
					return
				}
				id := crashFirstID + i
				body := fmt.Sprintf(`{"recordId":%d,"answers":{"mood":[%d,%d,3],"focus":{"q1":%d,"q2":true}}}`, id, i%5+1, i%3+1, i%4+1)
				resp, err := client.Post(s.Base+"/api/assessment/submit", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- fmt.Errorf("submit %d: %w", id, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					errs <- fmt.Errorf("submit %d: %d %s", id, resp.StatusCode, b)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v\nserver logs (tail):\n%s", err, tail(s.Logs(), 4000))
	}
}

// countRuns returns, per record id, how many "generating report" lines logs contains.
func countRuns(t *testing.T, logs string) map[int64]int {
	t.Helper()
	runs := map[int64]int{}
	for line := range strings.Lines(logs) {
		if !strings.Contains(line, `"generating report"`) {
			continue
		}
		var e struct {
			Msg      string `json:"msg"`
			RecordID int64  `json:"recordId"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e.Msg == "generating report" {
			runs[e.RecordID]++
		}
	}
	return runs
}

func sum(m map[int64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// mailJobID is the caller's id of the i-th mail job.
func mailJobID(i int) string { return fmt.Sprintf("mail-%d", i) }

// mailFarDelayed tells whether the i-th mail job is delayed an hour (still scheduled at the end).
func mailFarDelayed(i int) bool { return i%50 == 3 }

// enqueueMailJobs POSTs crashMailJobs jobs with records to crashMailQueue from
// crashSubmitters goroutines: ids mail-<i>, every 4th delayed 1..20 s, every 50th an hour.
func enqueueMailJobs(t *testing.T, s *server) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: crashSubmitters}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, crashSubmitters)
	for range crashSubmitters {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= crashMailJobs {
					return
				}
				opts := ""
				switch {
				case mailFarDelayed(i):
					opts = `,"delay":"1h"`
				case i%4 == 1:
					opts = fmt.Sprintf(`,"delay":"%ds"`, 1+i%20)
				}
				body := fmt.Sprintf(`{"id":%q,"payload":{"to":"user%d@example.com","n":%d}%s}`, mailJobID(i), i, i, opts)
				resp, err := client.Post(s.Base+"/v1/queues/"+crashMailQueue+"/jobs", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- fmt.Errorf("enqueue %s: %w", mailJobID(i), err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					errs <- fmt.Errorf("enqueue %s: %d %s", mailJobID(i), resp.StatusCode, b)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v\nserver logs (tail):\n%s", err, tail(s.Logs(), 4000))
	}
}

// countingWebhook is the mail queue's webhook endpoint: it counts the calls per job id.
type countingWebhook struct {
	url   string
	mu    sync.Mutex
	calls map[string]int
}

// newCountingWebhook serves the webhook; each call takes delay, then answers 204.
func newCountingWebhook(t *testing.T, delay time.Duration) *countingWebhook {
	h := &countingWebhook{calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.calls[r.Header.Get(queue.HeaderJobID)]++
		h.mu.Unlock()
		time.Sleep(delay)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// checkMailJobs checks every accepted mail job after the crash and the takeover: the ones due
// are done (record state done) and were delivered, twice only if in flight at the kill; the
// ones delayed an hour are still scheduled and were never delivered; nothing is dead, pending
// or missing.
func checkMailJobs(t *testing.T, rc redis.UniversalClient, keys queue.Keys, hook *countingWebhook, inFlight map[string]bool) {
	t.Helper()
	ctx := context.Background()
	cmds, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range crashMailJobs {
			p.HGet(ctx, keys.Job(mailJobID(i)), "state")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	bad, twice := 0, 0
	for i, c := range cmds {
		id, st := mailJobID(i), c.(*redis.StringCmd).Val()
		want := queue.StateDone
		if mailFarDelayed(i) {
			want = queue.StateScheduled
		}
		calls := hook.calls[id]
		switch {
		case st != string(want):
			bad++
			if bad <= 10 {
				t.Errorf("mail job %s: record state %q, want %s (webhook called %d times)", id, st, want, calls)
			}
		case want == queue.StateScheduled && calls != 0, want == queue.StateDone && calls == 0:
			bad++
			t.Errorf("mail job %s (%s): webhook called %d times", id, st, calls)
		case calls > 1:
			twice++
			if !inFlight[id] {
				bad++
				t.Errorf("mail job %s delivered %d times but was not in flight at the kill", id, calls)
			}
		}
	}
	if n := rc.ZCard(ctx, keys.Scheduled).Val(); n != crashMailJobs/50 {
		t.Errorf("%d mail jobs scheduled, want the %d delayed an hour", n, crashMailJobs/50)
	}
	if n, m := rc.LLen(ctx, keys.Dead).Val(), rc.LLen(ctx, keys.Pending).Val(); n != 0 || m != 0 {
		t.Errorf("%d mail jobs dead, %d pending at the end", n, m)
	}
	if bad > 0 {
		t.Fatalf("%d of %d mail jobs lost, misplaced or wrongly delivered", bad, crashMailJobs)
	}
	t.Logf("mail jobs: %d done, %d still scheduled, none missing; %d delivered twice (%d were in flight at the SIGKILL)",
		crashMailJobs-crashMailJobs/50, crashMailJobs/50, twice, len(inFlight))
}
