package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/redistest"
)

// Tokens of the dashboard test (long enough for any listener).
const (
	adminToken = "dashboard-admin-token-0123456789"
	readToken  = "dashboard-read-token-0123456789ab"
)

// hostile is a string that would run script if it ever became markup or a link.
const hostile = `"><img src=x id=pwned-img onerror="window.__pwned=1"><script>window.__pwned=2</script>`

// chromiumPath finds the browser (scripts/ensure-chromium.sh installs Debian's chromium).
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("REDSTATE_REQUIRE_REDIS") == "1" {
		t.Fatal("chromium is not installed (make test runs scripts/ensure-chromium.sh)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// artifactDir is where screenshots go: $REDSTATE_ARTIFACTS or a directory under the test's
// temp dir (kept in the log).
func artifactDir(t *testing.T) string {
	dir := os.Getenv("REDSTATE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "redstate-e2e-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// flakyWebhook fails the first call and accepts the following ones.
type flakyWebhook struct {
	calls atomic.Int64
	url   string
}

func newFlakyWebhook(t *testing.T) *flakyWebhook {
	w := &flakyWebhook{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		if w.calls.Add(1) == 1 {
			http.Error(rw, "mail server down", http.StatusInternalServerError)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	w.url = "http://" + ln.Addr().String() + "/mail"
	return w
}

// failOnceStages answers stage webhooks: stage "f1" fails its first run (HTTP 500), every other
// run succeeds with an empty body (context kept).
func failOnceStages(t *testing.T) string {
	var failed atomic.Bool
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var req executor.StageRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		if req.Stage == "f1" && failed.CompareAndSwap(false, true) {
			http.Error(rw, "stage f1 failed once", http.StatusInternalServerError)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/stage"
}

// TestDashboard_WalksEveryPageInChromium runs `redstate serve` on real Redis with auth, puts
// data in every block, and drives the dashboard in headless Chromium: log in, every page
// renders its data, requeue a dead letter (the job runs again: Redis's dead list empties and the
// webhook is called a second time), pause, cancel and retry an executor task (its state in
// Redis follows), a hostile build stays inert text, and a read-only session shows no action
// buttons. The window is phone-sized (420 px wide) and no page may scroll sideways.
// Screenshots of every page are saved as artifacts.
func TestDashboard_WalksEveryPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and a browser: not under -short")
	}
	browser := chromiumPath(t)
	rds := redistest.StartStandalone(t)
	hook := newFlakyWebhook(t)
	stages := newStageServer(t, "s1")
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `
auth:
  tokens:
    - {name: ops, token: %q, roles: [admin]}
    - {name: viewer, token: %q, roles: [read]}
queue:
  queues:
    - name: report:queue
    - name: mail:queue
      handler: webhook
      max-retries: 0
      webhook: {url: %q, timeout: 2s}
executor:
  handlers:
    - {name: steps, url: %q, timeout: 2m}
    - {name: flaky, url: %q, timeout: 10s}
index:
  tables:
    - db: shop
      table: orders
      key: id
      hash-tag: true
      columns:
        - {name: id, type: long}
        - {name: region, type: int}
      dimensions:
        - [{code: reg, column: region}]
`, adminToken, readToken, hook.url, stages.url, failOnceStages(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", cfg, "--redis", rds.URL)
	bearer := []string{"Authorization", "Bearer " + adminToken}
	must := func(method, path, body string, want int) []byte {
		t.Helper()
		code, resp, _ := s.do(t, method, path, body, bearer...)
		if code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, code, resp, want)
		}
		return resp
	}

	// Data: a build with hostile strings, a dead letter, a running executor task.
	// The API refuses a javascript: URL, so the hostile document is written the way a legacy
	// writer of the seed's keys would: straight into Redis, over one the API created.
	const buildID = "7d1c4a52-0f7e-4c1b-9a43-2f6b1e8d9c10"
	doc := func(download string) string {
		return fmt.Sprintf(`{"buildId":%q,"projectId":"ui-project","platforms":["android"],"status":"IN_PROGRESS",
		"platformResults":{"android":{"platform":"android","status":"IN_PROGRESS","progress":40,
		"downloadUrl":%q,"logUrl":%q,"errorMessage":%q}}}`, buildID, download, "https://logs.example.com/b1", hostile)
	}
	must(http.MethodPut, "/v1/builds/"+buildID, doc("builds/app.apk"), http.StatusOK)
	must(http.MethodPost, "/v1/index/events", `{"format":"canal","events":[
		{"data":[{"id":"1","region":"7"},{"id":"2","region":"7"}],"database":"shop","table":"orders","type":"INSERT","es":1700000000000,"id":1},
		{"data":[{"id":"1","region":"7"}],"database":"shop","table":"orders","type":"UPDATE","es":1600000000000,"id":0}]}`, http.StatusOK)
	rc := rds.Client(t)
	if err := rc.SetArgs(context.Background(), buildstatus.NewKeys(redstate.KeyPrefix{}).Build(buildID), strings.Join(strings.Fields(doc("javascript:window.__pwned=3")), " "),
		redis.SetArgs{KeepTTL: true}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.LPush(context.Background(), "mail:queue", `{"RecordId":77,"RetryCount":0,"EnqueueTime":"2026-11-22T10:00:00"}`).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the mail job dead-lettered", func() bool {
		n, _ := rc.LLen(context.Background(), "mail:queue:dead").Result()
		return n == 1
	})
	must(http.MethodPost, "/v1/executor/plans", `{"planId":"plan-ui","maxConcurrency":1,"tasks":[{"taskId":"task-ui","tenantId":"acme","handler":"steps",`+
		`"stages":["s0","s1","s2"],"contextData":{},"retry":{"maxAttempts":1}}]}`, http.StatusCreated)
	select {
	case <-stages.blocked:
	case <-time.After(30 * time.Second):
		t.Fatalf("stage s1 never started\n%s", s.Logs())
	}
	must(http.MethodPost, "/v1/executor/plans", `{"planId":"plan-flaky","maxConcurrency":1,"tasks":[{"taskId":"task-flaky","tenantId":"beta","handler":"flaky",`+
		`"stages":["f0","f1","f2"],"contextData":{},"retry":{"maxAttempts":1}}]}`, http.StatusCreated)
	var task executor.TaskStatusInfo
	eventually(t, 30*time.Second, "the flaky task failed at f1", func() bool {
		getJSONAuth(t, s, "/v1/executor/tasks/task-flaky", adminToken, &task)
		return task.Status == executor.TaskFailed
	})

	ctx, cancel := startBrowser(t, browser, 3*time.Minute, func(format string, args ...any) {
		// The protocol library predates some events of Debian's newer chromium; it reports
		// them as unhandled, which is harmless.
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled") {
			t.Logf("chromedp: %s", msg)
		}
	}, chromedp.WindowSize(420, 900))
	defer cancel()
	shots := artifactDir(t)
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
	// screenshot saves the page and checks it fits the phone-sized window (420 px): the page
	// never scrolls sideways, wide tables scroll inside their own box.
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
		path := filepath.Join(shots, "dashboard-"+name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	// open loads a page afresh (navigating to the same URL with a hash would not reload it)
	// and waits until the element waitFor is visible.
	open := func(hash string, waitFor string) {
		t.Helper()
		run("open "+hash, chromedp.Navigate("about:blank"), chromedp.Navigate(s.Base+"/ui/"+hash), chromedp.WaitVisible(waitFor, chromedp.ByQuery))
	}
	text := func(sel string) string {
		t.Helper()
		var s string
		run("text of "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
		return s
	}

	// Log in as the admin.
	open("#/overview", "form.login")
	screenshot("login")
	run("log in", chromedp.SendKeys("input[name=token]", adminToken, chromedp.ByQuery), chromedp.Click("form.login button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("//h2[text()='Blocks']", chromedp.BySearch))
	var jsCookies string
	run("cookie flags", chromedp.Evaluate(`document.cookie`, &jsCookies))
	if strings.Contains(jsCookies, "redstate_session") {
		t.Fatalf("the session cookie is readable by script: %q", jsCookies)
	}
	if view := text("#view"); !strings.Contains(view, "standalone") || !strings.Contains(view, "reachable") || !strings.Contains(view, "executor") {
		t.Fatalf("overview:\n%s", view)
	}
	if server := text("#server-card"); !strings.Contains(server, "version ") || !strings.Contains(server, runtime.Version()) {
		t.Fatalf("the overview does not say what the server was built from:\n%s", server)
	}
	screenshot("overview")

	// Builds: the hostile build renders as inert text.
	open("#/builds?build="+buildID, "#build-detail")
	var pwned any
	var imgs, jsLinks int
	run("inert", chromedp.Evaluate(`window.__pwned === undefined ? null : window.__pwned`, &pwned),
		chromedp.Evaluate(`document.querySelectorAll('#view img, #view script').length`, &imgs),
		chromedp.Evaluate(`[...document.querySelectorAll('a')].filter(a => !/^(https?:|#|\/)/.test(a.getAttribute('href') || '#') || a.protocol === 'javascript:').length`, &jsLinks))
	if pwned != nil || imgs != 0 || jsLinks != 0 {
		t.Fatalf("hostile build ran or became markup: pwned=%v imgs=%d javascript links=%d", pwned, imgs, jsLinks)
	}
	if view := text("#view"); !strings.Contains(view, hostile) {
		t.Fatalf("the hostile string is not shown as text:\n%s", view)
	}
	var logHref string
	run("log link", chromedp.AttributeValue(`#build-detail a[href^="https://logs.example.com"]`, "href", &logHref, nil, chromedp.ByQuery))
	screenshot("build")
	// Live progress over SSE: a platform update shows without reloading. The PATCH is a merge
	// patch, so it must clear the hostile downloadUrl stored behind the API's back (a patch that
	// kept it would be refused: the whole document is validated before it is written).
	must(http.MethodPatch, "/v1/builds/"+buildID+"/platforms/android", `{"status":"SUCCESS","progress":100}`, http.StatusBadRequest)
	must(http.MethodPatch, "/v1/builds/"+buildID+"/platforms/android", `{"status":"SUCCESS","progress":100,"downloadUrl":null}`, http.StatusOK)
	run("live update", chromedp.WaitVisible(`//td/span[contains(@class,'badge') and text()='SUCCESS']`, chromedp.BySearch))
	open("#/builds", "table")
	if view := text("#view"); !strings.Contains(view, buildID) {
		t.Fatalf("builds list:\n%s", view)
	}

	// Queues: the dead letter, requeued with a click; the job runs again and is acked.
	open("#/queues?queue=mail%3Aqueue", "#queue-detail")
	if view := text("#queue-detail"); !strings.Contains(view, "mail server down") && !strings.Contains(view, "500") {
		t.Fatalf("dead letter without its last error:\n%s", view)
	}
	screenshot("queues")
	run("requeue", chromedp.Click(`//button[text()='Requeue']`, chromedp.BySearch), chromedp.WaitVisible(`//p[contains(text(),'requeued')]`, chromedp.BySearch))
	eventually(t, 20*time.Second, "the requeued job acked", func() bool {
		n, _ := rc.LLen(context.Background(), "mail:queue:dead").Result()
		return n == 0 && hook.calls.Load() == 2
	})
	// The queue's jobs-per-second chart draws the jobs that ran (the statistics history in Redis).
	open("#/queues?queue=mail%3Aqueue", `figure.chart[data-chart="queue-rates"] .u-legend`)
	eventually(t, 20*time.Second, "the jobs-per-second chart shows the jobs done", func() bool {
		var c *chartData
		run("read the chart", chromedp.Evaluate(fmt.Sprintf(readChart, "queue-rates"), &c))
		return c != nil && chartSum(c, "done") >= 1
	})

	// Executor: pause and cancel (with confirmation) a running task; retry a failed one from its
	// checkpoint. Each effect is read back from Redis.
	open("#/executor?tenant=acme", "#task-detail")
	if view := text("#view"); !strings.Contains(view, "plan-ui") || !strings.Contains(view, "task-ui") || !strings.Contains(view, " min") {
		t.Fatalf("executor page without the plan, the lock's holder or its time left:\n%s", view)
	}
	screenshot("executor")
	run("pause", chromedp.Click(`//button[text()='Pause']`, chromedp.BySearch), chromedp.WaitVisible(`//p[contains(text(),'pause requested')]`, chromedp.BySearch))
	keys, err := executor.NewKeys(redstate.KeyPrefix{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.HGet(context.Background(), keys.Task("task-ui"), "pauseRequested").Result(); err != nil || v != "true" {
		t.Fatalf("after Pause the task projection's pauseRequested = %q, %v", v, err)
	}
	run("cancel", chromedp.Click(`#task-detail .actions button.danger`, chromedp.ByQuery), chromedp.WaitVisible("#confirm", chromedp.ByQuery),
		chromedp.Click("#confirm-ok", chromedp.ByQuery), chromedp.WaitVisible(`//p[contains(text(),'cancel requested')]`, chromedp.BySearch))
	eventually(t, 30*time.Second, "the task cancelled in Redis", func() bool {
		st, _ := rc.HGet(context.Background(), keys.Task("task-ui"), "status").Result()
		return st == string(executor.TaskCancelled)
	})
	open("#/executor?task=task-ui", "#task-detail")
	open("#/executor?tenant=beta", "#task-detail")
	run("retry", chromedp.Click(`//button[text()='Retry from checkpoint']`, chromedp.BySearch), chromedp.WaitVisible(`//p[contains(text(),'retry started')]`, chromedp.BySearch))
	eventually(t, 30*time.Second, "the retried task completed in Redis", func() bool {
		st, _ := rc.HGet(context.Background(), keys.Task("task-flaky"), "status").Result()
		return st == string(executor.TaskCompleted)
	})

	// Index: the table's counters (2 applied, 1 stale). Feed: the fan-out backlog.
	open("#/index", "#view table")
	if view := text("#view"); !strings.Contains(view, "shop.orders") || !strings.Contains(view, "2") {
		t.Fatalf("index page:\n%s", view)
	}
	var cells []string
	run("index row", chromedp.Evaluate(`[...document.querySelectorAll('#view .scroll table')[0].querySelectorAll('tbody td')].map(td => td.textContent)`, &cells))
	if len(cells) < 4 || cells[0] != "shop.orders" || cells[1] != "2" || cells[2] != "1" {
		t.Fatalf("index counters = %v, want shop.orders applied 2 stale 1", cells)
	}
	screenshot("index")
	open("#/feed", "#view h1")
	if view := text("#view"); !strings.Contains(view, "feed:fanout") {
		t.Fatalf("feed page without the fan-out backlog:\n%s", view)
	}
	screenshot("feed")

	// A read-only session sees data but no action buttons.
	run("log out", chromedp.Click(`//button[text()='Log out']`, chromedp.BySearch), chromedp.WaitVisible("form.login", chromedp.ByQuery))
	run("log in read-only", chromedp.SendKeys("input[name=token]", readToken, chromedp.ByQuery), chromedp.Click("form.login button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("//h1[text()='Feed']", chromedp.BySearch))
	open("#/executor?task=task-ui", "#task-detail")
	var buttons []*cdp.Node
	run("no actions", chromedp.Nodes("#task-detail .actions button", &buttons, chromedp.ByQueryAll, chromedp.AtLeast(0)))
	if len(buttons) != 0 {
		t.Fatalf("a read-only session sees %d action buttons", len(buttons))
	}
	screenshot("readonly")
}

// TestDashboard_SessionCookieAndCSRF checks the session rules over plain HTTP: the login sets an
// HttpOnly, SameSite=Strict cookie; the cookie authorizes reads; a write needs the CSRF token;
// a read-only session cannot write; a bad token is refused.
func TestDashboard_SessionCookieAndCSRF(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "auth:\n  tokens:\n    - {name: ops, token: %q, roles: [admin]}\n    - {name: viewer, token: %q, roles: [read]}\n", adminToken, readToken), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", cfg)
	if code, body, _ := s.do(t, http.MethodPost, "/ui/login", `{"token":"wrong-token-wrong-token"}`); code != http.StatusUnauthorized {
		t.Fatalf("bad login = %d %s", code, body)
	}
	login := func(token string) (cookie, csrf string) {
		code, body, h := s.do(t, http.MethodPost, "/ui/login", fmt.Sprintf(`{"token":%q}`, token))
		if code != http.StatusOK {
			t.Fatalf("login = %d %s", code, body)
		}
		set := h.Get("Set-Cookie")
		if !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "SameSite=Strict") {
			t.Fatalf("session cookie flags: %s", set)
		}
		var sess struct{ CSRF string }
		_ = json.Unmarshal(body, &sess)
		return strings.SplitN(set, ";", 2)[0], sess.CSRF
	}
	cookie, csrf := login(adminToken)
	const id = "550e8400-e29b-41d4-a716-446655440000"
	build := strings.ReplaceAll(sampleBuild, sampleID, id)
	if code, body, _ := s.do(t, http.MethodGet, "/v1/builds/"+id, "", "Cookie", cookie); code != http.StatusNotFound {
		t.Fatalf("read with the cookie = %d %s (want 404: authorized, no such build)", code, body)
	}
	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+id, build, "Cookie", cookie); code != http.StatusForbidden {
		t.Fatalf("write without CSRF = %d %s", code, body)
	}
	if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+id, build, "Cookie", cookie, "X-CSRF-Token", csrf); code != http.StatusOK {
		t.Fatalf("write with CSRF = %d %s", code, body)
	}
	rcookie, rcsrf := login(readToken)
	if code, body, _ := s.do(t, http.MethodDelete, "/v1/builds/"+id, "", "Cookie", rcookie, "X-CSRF-Token", rcsrf); code != http.StatusForbidden {
		t.Fatalf("read-only write = %d %s", code, body)
	}
	if code, body, _ := s.do(t, http.MethodGet, "/v1/builds/"+id, "", "Cookie", cookie+"x"); code != http.StatusUnauthorized {
		t.Fatalf("tampered cookie = %d %s", code, body)
	}
}

// getJSONAuth GETs path with a bearer token into v.
func getJSONAuth(t *testing.T, s *server, path, token string, v any) {
	t.Helper()
	code, body, _ := s.do(t, http.MethodGet, path, "", "Authorization", "Bearer "+token)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatal(err)
	}
}
