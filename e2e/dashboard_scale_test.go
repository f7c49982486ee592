package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redistest"
)

// Sizes of the large-list test: the 1,000 queues, 10,000 dead letters, 100,000 builds.
const (
	scaleQueues      = 1000
	scaleDeadLetters = 10000
	scaleBuilds      = 100000
)

// scaleLoadBound is what the test asserts of a page's time to usable DOM. The target is 1 s
// (docs/dashboard.md has the measured times); the assertion is looser because the server under
// test is a -race build on a 2-core machine shared with other tests, where a page that takes
// 0.3 s alone was seen to take several times that.
const scaleLoadBound = 4 * time.Second

// scaleLoads is how many times each page is loaded; the median is reported and asserted.
const scaleLoads = 3

// TestDashboard_LargeListsInChromium runs `redstate serve` on real Redis with 1,000 queues, one
// of them holding 10,000 dead letters, and 100,000 builds (written straight into Redis, as
// the registry stores them), then loads the Queues page, that queue's dead letters and the
// Builds page in headless Chromium: each shows one page of 50 with the whole count and a
// Next button that reaches the following page (and the Feed page, which shows the fan-out
// queue's counts), and each is usable (rendered) within
// scaleLoadBound, timed with the Performance API from navigation start. The times are logged.
func TestDashboard_LargeListsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and a browser: not under -short")
	}
	browser := chromiumPath(t)
	rds := redistest.StartStandalone(t)
	ctx := context.Background()
	rc := rds.Client(t)

	var cfg strings.Builder
	cfg.WriteString("queue:\n  queues:\n")
	names := make([]string, scaleQueues)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%04d:jobs", i)
		fmt.Fprintf(&cfg, "    - {name: %q, handler: external}\n", names[i])
	}
	cfgPath := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	// 10,000 dead letters on the first queue (newest first: job-09999 at the head), 100,000
	// build documents.
	deadQueue := names[0]
	failed := time.Date(2026, 11, 20, 3, 0, 0, 0, time.UTC)
	pipe := rc.Pipeline()
	for i := range scaleDeadLetters {
		m := queue.Message{RetryCount: 3, EnqueueTime: failed, JobID: fmt.Sprintf("job-%05d", i),
			LastError: fmt.Sprintf("attempt 4 of job %05d: upstream 503", i), FailedAt: failed.Add(time.Duration(i) * time.Second)}
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		pipe.LPush(ctx, queue.NewKeys(redstate.KeyPrefix{Block: deadQueue}, false).Dead, raw)
	}
	keys := buildstatus.NewKeys(redstate.KeyPrefix{})
	ids := make([]string, scaleBuilds)
	for i := range scaleBuilds {
		ids[i] = fmt.Sprintf("%08x-5ca1-4e00-8000-%012x", i, i)
		pipe.Set(ctx, keys.Build(ids[i]), fmt.Sprintf(`{"buildId":%q,"projectId":"project-%03d","platforms":["android","ios"],"status":"SUCCESS",`+
			`"platformResults":{"android":{"platform":"android","status":"SUCCESS","progress":100},"ios":{"platform":"ios","status":"SUCCESS","progress":100}}}`,
			ids[i], i%500), 0)
		if pipe.Len() >= 5000 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	s := startServer(t, "--config", cfgPath, "--redis", rds.URL)
	bctx, cancel := startBrowser(t, browser, 5*time.Minute, nil, chromedp.WindowSize(1200, 900))
	defer cancel()
	shot := func(name string) {
		var png []byte
		if err := chromedp.Run(bctx, chromedp.FullScreenshot(&png, 100)); err == nil {
			_ = os.WriteFile(filepath.Join(artifactDir(t), "dashboard-scale-"+name+".png"), png, 0o644)
		}
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, scancel := context.WithTimeout(bctx, time.Minute)
		defer scancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			shot("failed")
			var html string
			_ = chromedp.Run(bctx, chromedp.OuterHTML("#view", &html, chromedp.ByQuery))
			t.Fatalf("%s: %v\npage:\n%.3000s\nserver logs:\n%s", what, err, html, s.Logs())
		}
	}
	// load opens hash in a fresh document, waits for sel, and returns the time from navigation
	// start to the end of the page's render (app.js stamps body[data-ready] with Date.now()).
	load := func(hash, sel string) time.Duration {
		t.Helper()
		var ms float64
		run("open "+hash, chromedp.Navigate("about:blank"), chromedp.Navigate(s.Base+"/ui/"+hash),
			chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.WaitReady("body[data-ready]", chromedp.ByQuery),
			chromedp.Evaluate(`Number(document.body.dataset.ready) - performance.timeOrigin`, &ms))
		return time.Duration(ms * float64(time.Millisecond))
	}
	// timed loads the page scaleLoads times and asserts the median.
	timed := func(name, hash, sel string) {
		t.Helper()
		times := make([]time.Duration, scaleLoads)
		for i := range times {
			times[i] = load(hash, sel)
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		median := times[len(times)/2]
		t.Logf("%s: time to usable DOM %v (median of %v)", name, median.Round(time.Millisecond), times)
		if median > scaleLoadBound {
			shot(name)
			t.Errorf("%s took %v to render (median of %v), more than %v", name, median, times, scaleLoadBound)
		}
	}
	texts := func(sel string) []string {
		t.Helper()
		var v []string
		run("texts of "+sel, chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, sel), &v))
		return v
	}
	text := func(sel string) string {
		t.Helper()
		var v string
		run("text of "+sel, chromedp.Text(sel, &v, chromedp.ByQuery))
		return v
	}
	next := func(pager, sel string) {
		t.Helper()
		run("next page of "+pager, chromedp.Click(pager+" button.next-page", chromedp.ByQuery),
			chromedp.WaitVisible(pager+" button.first-page", chromedp.ByQuery), chromedp.WaitVisible(sel, chromedp.ByQuery))
	}

	// Queues: 1,000 counted, 50 listed in name order, Next lists the following 50; the filter
	// finds one queue among them.
	// The server's queues: the configured ones and those the blocks add (the report queue).
	var all struct {
		Queues []struct{ Name string }
	}
	began := time.Now()
	getJSON(t, s, "/v1/queues", &all)
	t.Logf("GET /v1/queues without limit (every queue's counts): %v", time.Since(began).Round(time.Millisecond))
	listed := make([]string, len(all.Queues))
	for i, q := range all.Queues {
		listed[i] = q.Name
	}
	if len(listed) < scaleQueues || !slices.IsSorted(listed) {
		t.Fatalf("the API lists %d queues (sorted: %v)", len(listed), slices.IsSorted(listed))
	}
	timed("queues (1,000 queues)", "#/queues", "#queue-count")
	if c := text("#queue-count"); !strings.HasPrefix(c, fmt.Sprintf("%d queues", len(listed))) {
		t.Fatalf("queue count reads %q, want %d queues", c, len(listed))
	}
	const queueLinks = `#queue-page tbody td:first-child a`
	if got := texts(queueLinks); !slices.Equal(got, listed[:50]) {
		t.Fatalf("first page lists %d queues %v…, want %v…", len(got), got[:min(3, len(got))], listed[:3])
	}
	next(".queue-pages", "#queue-count")
	if got := texts(queueLinks); !slices.Equal(got, listed[50:100]) {
		t.Fatalf("second page lists %v…, want %v…", got[:min(3, len(got))], listed[50:53])
	}
	shot("queues")
	load("#/queues?qmatch=0777", "#queue-count")
	if got := texts(queueLinks); !slices.Equal(got, []string{"tenant-0777:jobs"}) {
		t.Fatalf("filter 0777 lists %v", got)
	}

	// The feed page reads the fan-out queue's counts only.
	timed("feed (1,000 queues)", "#/feed", "#view h1")
	if view := text("#view"); !strings.Contains(view, "Fan-out backlog") || !strings.Contains(view, "feed:fanout") {
		t.Fatalf("feed page:\n%s", view)
	}

	// Dead letters: 10,000 counted, the newest 50 listed, Next lists the following 50.
	deadHash := "#/queues?queue=" + url.QueryEscape(deadQueue)
	timed("dead letters (10,000)", deadHash, "#dead-letter-page table")
	if h := text("#dead-letters h3"); h != fmt.Sprintf("Dead letters (%d)", scaleDeadLetters) {
		t.Fatalf("dead letters heading %q", h)
	}
	const deadJobs = `#dead-letter-page tbody td:nth-child(2)`
	first := texts(deadJobs)
	if len(first) != 50 || first[0] != fmt.Sprintf("job-%05d", scaleDeadLetters-1) || first[49] != fmt.Sprintf("job-%05d", scaleDeadLetters-50) {
		t.Fatalf("first dead-letter page lists %d jobs from %v", len(first), first[:min(2, len(first))])
	}
	next(".dead-pages", "#dead-letter-page table")
	if second := texts(deadJobs); len(second) != 50 || second[0] != fmt.Sprintf("job-%05d", scaleDeadLetters-51) {
		t.Fatalf("second dead-letter page lists %d jobs from %v", len(second), second[:min(2, len(second))])
	}
	if where := text(".dead-pages"); !strings.Contains(where, "51–100 of 10000") {
		t.Fatalf("second dead-letter page says %q", where)
	}
	shot("dead-letters")

	// Builds: one page of 50 of the 100,000, Next lists 50 others.
	timed("builds (100,000)", "#/builds", "#build-page table")
	const buildLinks = `#build-page tbody td:first-child a`
	page1 := texts(buildLinks)
	next(".build-pages", "#build-page table")
	page2 := texts(buildLinks)
	if len(page1) < 50 || len(page2) == 0 {
		t.Fatalf("build pages list %d and %d builds", len(page1), len(page2))
	}
	for _, id := range page2 {
		if slices.Contains(page1, id) {
			t.Fatalf("build %s is on both pages", id)
		}
		if _, ok := slices.BinarySearch(ids, id); !ok {
			t.Fatalf("build page lists %s, which was never written", id)
		}
	}
	shot("builds")
}
