package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/redstate/redstate/redistest"
)

// shownJob is the part of GET /v1/queues/{queue}/jobs/{id} the dashboard test checks.
type shownJob struct {
	State    string `json:"state"`
	Attempts []struct {
		Error string `json:"error"`
	} `json:"attempts"`
}

// TestDashboard_QueueJobsInChromium runs `redstate serve` on real Redis with a webhook queue
// and drives the Queues page's jobs in headless Chromium: delayed jobs listed as scheduled and
// paged with the Next button, a job failed to dead (its hostile payload inert text, its attempt's
// error shown), the scheduled job cancelled and the dead job requeued from the page, the queue
// paused and resumed from the page (a job enqueued meanwhile waits pending, then runs); each
// effect is read back through the API. A read-only session lists the jobs without action buttons.
func TestDashboard_QueueJobsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and a browser: not under -short")
	}
	browser := chromiumPath(t)
	rds := redistest.StartStandalone(t)
	hook := newFlakyWebhook(t) // the first call fails: the first job run goes dead
	slow := newBlockingWebhook(t)
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `
auth:
  tokens:
    - {name: ops, token: %q, roles: [admin]}
    - {name: viewer, token: %q, roles: [read]}
    - {name: deployer, token: %q, roles: [write]}
queue:
  queues:
    - name: mail:queue
      handler: webhook
      max-retries: 0
      webhook: {url: %q, timeout: 2s}
    - name: slow:queue
      handler: webhook
      max-retries: 0
      webhook: {url: %q, timeout: 1m}
`, adminToken, readToken, writeToken, hook.url, slow.url), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", cfg, "--redis", rds.URL)
	bearer := []string{"Authorization", "Bearer " + adminToken}
	must := func(method, path, body string, want int) {
		t.Helper()
		if code, resp, _ := s.do(t, method, path, body, bearer...); code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, code, resp, want)
		}
	}
	const jobs = "/v1/queues/mail:queue/jobs"
	job := func(id string) shownJob {
		t.Helper()
		var j shownJob
		getJSONAuth(t, s, jobs+"/"+id, adminToken, &j)
		return j
	}
	paused := func() bool {
		t.Helper()
		var st struct{ Paused bool }
		getJSONAuth(t, s, "/v1/queues/mail:queue/stats", adminToken, &st)
		return st.Paused
	}

	// A job that fails to dead (the webhook's first call fails, no retries), its payload hostile;
	// three delayed jobs.
	must(http.MethodPost, jobs, fmt.Sprintf(`{"id":"dead-1","payload":{"note":%q},"maxRetries":0}`, hostile), http.StatusCreated)
	eventually(t, 20*time.Second, "job dead-1 dead", func() bool { return job("dead-1").State == "dead" })
	for _, id := range []string{"later-1", "later-2", "later-3"} {
		must(http.MethodPost, jobs, fmt.Sprintf(`{"id":%q,"payload":{"n":1},"delay":"1h"}`, id), http.StatusCreated)
	}

	ctx, cancel := startBrowser(t, browser, 3*time.Minute, func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled") {
			t.Logf("chromedp: %s", msg)
		}
	}, chromedp.WindowSize(420, 900))
	defer cancel()
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			var html string
			_ = chromedp.Run(ctx, chromedp.OuterHTML("#view", &html, chromedp.ByQuery))
			t.Fatalf("%s: %v\npage:\n%s\nserver logs:\n%s", what, err, html, s.Logs())
		}
	}
	open := func(hash, waitFor string) {
		t.Helper()
		run("open "+hash, chromedp.Navigate("about:blank"), chromedp.Navigate(s.Base+"/ui/"+hash), chromedp.WaitVisible(waitFor, chromedp.ByQuery))
	}
	text := func(sel string) string {
		t.Helper()
		var v string
		run("text of "+sel, chromedp.Text(sel, &v, chromedp.ByQuery))
		return v
	}
	listed := func() []string {
		t.Helper()
		var ids []string
		run("listed jobs", chromedp.Evaluate(`[...document.querySelectorAll('#jobs tbody td:first-child a')].map(a => a.textContent)`, &ids))
		return ids
	}
	count := func(sel string) int {
		t.Helper()
		var nodes []*cdp.Node
		run("count "+sel, chromedp.Nodes(sel, &nodes, chromedp.ByQueryAll, chromedp.AtLeast(0)))
		return len(nodes)
	}
	// screenshot saves the page and checks it does not scroll sideways in the phone-sized window.
	screenshot := func(name string) {
		t.Helper()
		var overflow int
		run("width of "+name, chromedp.Evaluate(`document.documentElement.scrollWidth - window.innerWidth`, &overflow))
		if overflow > 0 {
			var wide []string
			_ = chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`, &wide))
			t.Errorf("page %s is %d px wider than the phone-sized window; too wide: %v", name, overflow, wide)
		}
		var png []byte
		run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
		if err := os.WriteFile(filepath.Join(artifactDir(t), "dashboard-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	confirm := func(what, button, flash string) {
		t.Helper()
		run(what, chromedp.Click(button, chromedp.ByQuery), chromedp.WaitVisible("#confirm", chromedp.ByQuery),
			chromedp.Click("#confirm-ok", chromedp.ByQuery), chromedp.WaitVisible(`//p[contains(text(),'`+flash+`')]`, chromedp.BySearch))
	}

	// Log in on the scheduled jobs, two a page: the Next button shows the third.
	open("#/queues?queue=mail%3Aqueue&state=scheduled&limit=2", "form.login")
	run("log in", chromedp.SendKeys("input[name=token]", adminToken, chromedp.ByQuery), chromedp.Click("form.login button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#jobs table", chromedp.ByQuery))
	first := listed()
	if len(first) != 2 || count("#jobs button.next-page") != 1 {
		t.Fatalf("first page of 2 lists %v with %d Next buttons", first, count("#jobs button.next-page"))
	}
	if n := count(`#jobs a[data-state="scheduled"][aria-current="page"]`); n != 1 {
		t.Fatalf("the scheduled tab is not the current one (%d)", n)
	}
	run("next page", chromedp.Click("#jobs button.next-page", chromedp.ByQuery), chromedp.WaitVisible("#jobs button.first-page", chromedp.ByQuery))
	all := append(listed(), first...)
	slices.Sort(all)
	if !slices.Equal(all, []string{"later-1", "later-2", "later-3"}) || count("#jobs button.next-page") != 0 {
		t.Fatalf("the two pages list %v (want later-1..3 once each) and the last has %d Next buttons", all, count("#jobs button.next-page"))
	}

	// One scheduled job: its view offers Cancel only; cancelled through the confirmation, the
	// API shows it cancelled.
	open("#/queues?queue=mail%3Aqueue&state=scheduled&job=later-1", "#job-detail")
	if view := text("#job-detail"); !strings.Contains(view, "scheduled") || !strings.Contains(view, `"n": 1`) {
		t.Fatalf("scheduled job view:\n%s", view)
	}
	if count("#job-detail button.cancel-job") != 1 || count("#job-detail button.requeue-job") != 0 {
		t.Fatal("a scheduled job's view does not offer exactly Cancel")
	}
	screenshot("job-scheduled")
	confirm("cancel the scheduled job", "#job-detail button.cancel-job", "job later-1 cancelled")
	if st := job("later-1").State; st != "cancelled" {
		t.Fatalf("after Cancel the API shows later-1 %s", st)
	}
	if view := text("#job-detail"); !strings.Contains(view, "cancelled") || count("#job-detail .actions button") != 0 {
		t.Fatalf("the cancelled job's view still offers actions or does not say cancelled:\n%s", view)
	}

	// The dead job: listed as dead with Requeue only; its view shows the attempt's error and
	// the hostile payload as inert text. Requeued from the page, it runs again and is done.
	open("#/queues?queue=mail%3Aqueue&state=dead", "#jobs table")
	if ids := listed(); !slices.Equal(ids, []string{"dead-1"}) || count("#jobs button.requeue-job") != 1 || count("#jobs button.cancel-job") != 0 {
		t.Fatalf("dead tab lists %v with %d Requeue and %d Cancel buttons", ids, count("#jobs button.requeue-job"), count("#jobs button.cancel-job"))
	}
	open("#/queues?queue=mail%3Aqueue&state=dead&job=dead-1", "#job-detail")
	attempts := text("#job-detail table")
	if failed := job("dead-1").Attempts; len(failed) != 1 || failed[0].Error == "" || !strings.Contains(attempts, failed[0].Error) {
		t.Fatalf("the dead job's attempts %+v are not shown with their error:\n%s", failed, attempts)
	}
	var pwned any
	var imgs int
	run("inert payload", chromedp.Evaluate(`window.__pwned === undefined ? null : window.__pwned`, &pwned),
		chromedp.Evaluate(`document.querySelectorAll('#view img, #view script').length`, &imgs))
	if payload := text("#job-payload"); pwned != nil || imgs != 0 || !strings.Contains(payload, `"><img src=x id=pwned-img`) {
		t.Fatalf("the hostile payload ran or became markup (pwned=%v imgs=%d) or is not shown as text:\n%s", pwned, imgs, payload)
	}
	screenshot("job-dead")
	run("requeue the dead job", chromedp.Click("#job-detail button.requeue-job", chromedp.ByQuery),
		chromedp.WaitVisible(`//p[contains(text(),'job dead-1 requeued')]`, chromedp.BySearch))
	eventually(t, 20*time.Second, "the requeued job done", func() bool { return job("dead-1").State == "done" })
	if j := job("dead-1"); len(j.Attempts) != 2 || hook.calls.Load() != 2 {
		t.Fatalf("after Requeue dead-1 has %d attempts and the webhook %d calls, want 2 and 2", len(j.Attempts), hook.calls.Load())
	}

	// Pause from the page: the page and the API say paused; a job enqueued meanwhile is listed
	// pending. Resume from the page: the API says running and the job runs.
	open("#/queues?queue=mail%3Aqueue", "#queue-pause button.pause-queue")
	if count("#queue-pause button.resume-queue") != 0 {
		t.Fatal("a running queue offers Resume")
	}
	run("pause", chromedp.Click("#queue-pause button.pause-queue", chromedp.ByQuery), chromedp.WaitVisible("#queue-pause .badge.paused", chromedp.ByQuery))
	screenshot("queue-paused")
	if !paused() {
		t.Fatal("after Pause the API says the queue is not paused")
	}
	must(http.MethodPost, jobs, `{"id":"while-paused","payload":{"n":2}}`, http.StatusCreated)
	open("#/queues?queue=mail%3Aqueue&state=pending", "#queue-pause button.resume-queue")
	if ids := listed(); !slices.Contains(ids, "while-paused") || count("#queue-pause button.pause-queue") != 0 {
		t.Fatalf("paused queue's pending tab lists %v (want while-paused) or still offers Pause", ids)
	}
	if st := job("while-paused").State; st != "pending" {
		t.Fatalf("a job of the paused queue is %s, want pending", st)
	}
	run("resume", chromedp.Click("#queue-pause button.resume-queue", chromedp.ByQuery), chromedp.WaitVisible("#queue-pause button.pause-queue", chromedp.ByQuery))
	if paused() {
		t.Fatal("after Resume the API says the queue is paused")
	}
	eventually(t, 20*time.Second, "the job enqueued while paused done after Resume", func() bool { return job("while-paused").State == "done" })

	// An active job: Cancel asks it to stop (the webhook call is cancelled), and it ends
	// cancelled.
	code, body, _ := s.do(t, http.MethodPost, "/v1/queues/slow:queue/jobs", `{"id":"slow-1","payload":{"n":3}}`, bearer...)
	if code != http.StatusCreated {
		t.Fatalf("enqueue slow-1 = %d %s", code, body)
	}
	slowJob := func() shownJob {
		var j shownJob
		getJSONAuth(t, s, "/v1/queues/slow:queue/jobs/slow-1", adminToken, &j)
		return j
	}
	select {
	case <-slow.called:
	case <-time.After(20 * time.Second):
		t.Fatalf("the slow job never called its webhook\n%s", s.Logs())
	}
	eventually(t, 20*time.Second, "slow-1 active", func() bool { return slowJob().State == "active" })
	open("#/queues?queue=slow%3Aqueue&state=active", "#jobs table")
	if ids := listed(); !slices.Equal(ids, []string{"slow-1"}) || count("#jobs button.requeue-job") != 0 {
		t.Fatalf("active tab lists %v, or offers Requeue", ids)
	}
	confirm("cancel the active job", "#jobs button.cancel-job", "cancel of job slow-1 requested")
	eventually(t, 20*time.Second, "the active job cancelled", func() bool { return slowJob().State == "cancelled" })

	// A write session (not admin) opens a queue by name, cancels a job from the list, and is
	// offered both Pause and Resume: the paused flag is in the admin-only stats.
	run("log out admin", chromedp.Click(`//button[text()='Log out']`, chromedp.BySearch), chromedp.WaitVisible("form.login", chromedp.ByQuery))
	run("log in write", chromedp.SendKeys("input[name=token]", writeToken, chromedp.ByQuery), chromedp.Click("form.login button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#queue-detail", chromedp.ByQuery))
	open("#/queues", "form.search input[name=queue]")
	run("open the queue by name", chromedp.SendKeys("form.search input[name=queue]", "mail:queue", chromedp.ByQuery), chromedp.Click("form.search button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#jobs table", chromedp.ByQuery))
	if n, m := count("#queue-pause button.pause-queue"), count("#queue-pause button.resume-queue"); n != 1 || m != 1 || !strings.Contains(text("#queue-pause"), "admin role") {
		t.Fatalf("a write session gets %d Pause and %d Resume buttons: %s", n, m, text("#queue-pause"))
	}
	run("scheduled tab", chromedp.Click(`#jobs a[data-state="scheduled"]`, chromedp.ByQuery), chromedp.WaitVisible(`#jobs a[data-state="scheduled"][aria-current="page"]`, chromedp.ByQuery))
	if ids := listed(); !slices.Equal(ids, []string{"later-2", "later-3"}) {
		t.Fatalf("write session's scheduled tab lists %v", ids)
	}
	confirm("cancel later-2 from the list", "#jobs tbody tr:first-child button.cancel-job", "job later-2 cancelled")
	if st := job("later-2").State; st != "cancelled" {
		t.Fatalf("after Cancel from the list the API shows later-2 %s", st)
	}

	// A read-only session lists the jobs but gets no action buttons.
	run("log out", chromedp.Click(`//button[text()='Log out']`, chromedp.BySearch), chromedp.WaitVisible("form.login", chromedp.ByQuery))
	run("log in read-only", chromedp.SendKeys("input[name=token]", readToken, chromedp.ByQuery), chromedp.Click("form.login button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#queue-detail", chromedp.ByQuery))
	open("#/queues?queue=mail%3Aqueue&state=scheduled", "#jobs table")
	if ids := listed(); !slices.Equal(ids, []string{"later-3"}) {
		t.Fatalf("read-only scheduled tab lists %v, want later-3", ids)
	}
	if n := count("#queue-detail button:not([type=submit]):not(.chart-windows *)"); n != 0 { // the chart window picker is no action
		t.Fatalf("a read-only session sees %d action buttons", n)
	}
	screenshot("jobs-readonly")
}

// writeToken is the dashboard jobs test's write-role (not admin) token.
const writeToken = "dashboard-write-token-0123456789ab"

// blockingWebhook answers a job's webhook call only when the call is cancelled (the job's
// context ends); called receives once per call.
type blockingWebhook struct {
	url    string
	called chan struct{}
}

func newBlockingWebhook(t *testing.T) *blockingWebhook {
	w := &blockingWebhook{called: make(chan struct{}, 16)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.called <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-done:
		}
		http.Error(rw, "stopped", http.StatusServiceUnavailable)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { close(done); _ = srv.Close() })
	w.url = "http://" + ln.Addr().String() + "/slow"
	return w
}
