package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redstate/redstate/redistest"
)

// seriesAnswer is GET /v1/stats/series.
type seriesAnswer struct {
	Window string  `json:"window"`
	Step   string  `json:"step"`
	Times  []int64 `json:"times"`
	Series []struct {
		Metric string            `json:"metric"`
		Labels map[string]string `json:"labels"`
		Unit   string            `json:"unit"`
		Values []*float64        `json:"values"`
	} `json:"series"`
}

// chartData is what a chart draws, read from the page through the figure's panel (charts.js):
// uPlot's columns (times, then one column per series), each series' legend name, each axis's
// label and tick labels (uPlot draws them on its canvas and keeps the last drawn ones in
// _values) and the legend's text.
type chartData struct {
	Columns [][]*float64 `json:"columns"`
	Names   []string     `json:"names"`
	Axes    []string     `json:"axes"`
	Legend  []string     `json:"legend"`
	Window  string       `json:"window"`
}

// String summarises the chart for a failure message (the columns by length and last value).
func (c *chartData) String() string {
	if c == nil {
		return "no chart"
	}
	var last []string
	for _, col := range c.Columns {
		v := "none"
		if n := len(col); n > 0 && col[n-1] != nil {
			v = fmt.Sprint(*col[n-1])
		}
		last = append(last, fmt.Sprintf("%d points, last %s", len(col), v))
	}
	return fmt.Sprintf("window %s, series %q, axes %q, legend %q, columns %v", c.Window, c.Names, c.Axes, c.Legend, last)
}

// readChart is the script that reads a chart's data by its data-chart key.
const readChart = `(() => {
  const f = document.querySelector('figure.chart[data-chart=%q]');
  const p = f && f.chartPanel && f.chartPanel.plot;
  if (!p) return null;
  return { columns: p.data, names: p.series.slice(1).map((s) => s.label), window: f.dataset.window,
    axes: p.axes.map((a) => [a.label || '', ...(a._values || [])].join(' ')),
    legend: [...f.querySelectorAll('.u-legend .u-series')].map((s) => s.textContent) };
})()`

// TestDashboard_ChartsInChromium runs `redstate serve` on real Redis with a webhook queue, pauses
// the queue and enqueues jobs through the API, then resumes it so they run, and checks the
// Queues page's charts in headless Chromium: the charts have a time axis, a y axis in their
// unit and a legend naming every series; the jobs-by-state chart's last point equals the
// series API's figure at the same second (and the queue's counts while paused); the jobs-per-
// second chart's last point equals the API's, and its done series counts every job; the window
// picker switches the charts to 1 h; a hidden tab reads no series; the Index, Feed, Executor and
// Builds pages draw their charts in their units. Screenshots are saved, and on a failure the
// page's.
func TestDashboard_ChartsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and a browser: not under -short")
	}
	browser := chromiumPath(t)
	rds := redistest.StartStandalone(t)
	hook := newFlakyWebhook(t)
	hook.calls.Store(1) // every call succeeds
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `
queue:
  queues:
    - name: mail:queue
      handler: webhook
      max-retries: 0
      webhook: {url: %q, timeout: 2s}
`, hook.url), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", cfg, "--redis", rds.URL)
	must := func(method, path, body string, want int) {
		t.Helper()
		if code, resp, _ := s.do(t, method, path, body); code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, code, resp, want)
		}
	}
	const queueName = "mail:queue"
	series := func(metrics ...string) seriesAnswer {
		t.Helper()
		q := url.Values{"metric": metrics, "window": {"15m"}, "label.queue": {queueName}}
		var a seriesAnswer
		getJSON(t, s, "/v1/stats/series?"+q.Encode(), &a)
		return a
	}

	ctx, cancel := startBrowser(t, browser, 4*time.Minute, nil, chromedp.WindowSize(1200, 1000))
	defer cancel()
	shot := func(name string) {
		var png []byte
		if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err == nil {
			_ = os.WriteFile(filepath.Join(artifactDir(t), "dashboard-charts-"+name+".png"), png, 0o644)
		}
	}
	fail := func(format string, args ...any) {
		t.Helper()
		shot("failed")
		t.Fatalf(format+"\nserver logs:\n%s", append(args, s.Logs())...)
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			fail("%s: %v", what, err)
		}
	}
	chart := func(key string) *chartData {
		t.Helper()
		var d *chartData
		run("read chart "+key, chromedp.Evaluate(fmt.Sprintf(readChart, key), &d))
		return d
	}
	// awaitChart polls the chart until cond holds on it and a fresh series answer (20 s).
	awaitChart := func(what, key string, metrics []string, cond func(c *chartData, a seriesAnswer) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			c := chart(key)
			a := series(metrics...)
			if c != nil && cond(c, a) {
				return
			}
			if time.Now().After(deadline) {
				fail("timed out waiting for %s: chart %s = %v\nAPI = %+v", what, key, c, a)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Paused, the queue keeps its jobs pending: 4 of them.
	must(http.MethodPost, "/v1/queues/"+queueName+"/pause", "", http.StatusOK)
	const jobs = 4
	for i := range jobs {
		must(http.MethodPost, "/v1/queues/"+queueName+"/jobs", fmt.Sprintf(`{"id":"chart-%d","payload":{"n":%d}}`, i, i), http.StatusCreated)
	}
	run("open the queue", chromedp.Navigate(s.Base+"/ui/#/queues?queue=mail%3Aqueue"),
		chromedp.WaitVisible(`figure.chart[data-chart="queue-size"] .u-legend`, chromedp.ByQuery))

	// Axes and legends: a time axis, a y axis with the unit, every series named.
	rates := chart("queue-rates")
	if rates == nil || len(rates.Axes) != 2 || !strings.Contains(rates.Axes[1], "per second") || !strings.Contains(rates.Axes[0], ":") {
		fail("the jobs-per-second chart's axes: %v", rates)
	}
	if lat := chart("queue-latency"); lat == nil || !strings.Contains(lat.Axes[1], "seconds") {
		fail("the latency chart's axes: %v", lat)
	}

	// The jobs-by-state chart's last point is the API's figure at that second: 4 pending, as the
	// queue's counts say.
	sizes := []string{"queue.size"}
	awaitChart("4 pending jobs on the chart, as the API says", "queue-size", sizes, func(c *chartData, a seriesAnswer) bool {
		last, ok := lastPoint(c, a)
		return ok && last["pending"] == jobs
	})
	var st struct{ Pending int64 }
	getJSON(t, s, "/v1/queues/"+queueName+"/stats", &st)
	if st.Pending != jobs {
		t.Fatalf("the queue's counts say %d pending, want %d", st.Pending, jobs)
	}
	shot("paused")

	// Resumed, the jobs run: the chart's last point follows the API, and its done series counts
	// all four jobs (per-second rates over one-second steps).
	must(http.MethodPost, "/v1/queues/"+queueName+"/resume", "", http.StatusOK)
	eventually(t, 20*time.Second, "the jobs done", func() bool { return hook.calls.Load() == 1+jobs })
	rateMetrics := []string{"queue.enqueued", "queue.done", "queue.failed"}
	awaitChart("every job done on the chart, its last point as the API's", "queue-rates", rateMetrics, func(c *chartData, a seriesAnswer) bool {
		_, ok := lastPoint(c, a)
		return ok && chartSum(c, "done") == jobs && chartSum(c, "enqueued") == jobs
	})
	awaitChart("0 pending after the run", "queue-size", sizes, func(c *chartData, a seriesAnswer) bool {
		last, ok := lastPoint(c, a)
		return ok && last["pending"] == 0
	})
	// The legend names every series the API answers (a series exists once an instance wrote it:
	// failed, never counted here, has none), each with its value.
	rates = chart("queue-rates")
	if !slices.Equal(rates.Names, []string{"enqueued", "done"}) || len(rates.Legend) != 3 ||
		!strings.HasPrefix(rates.Legend[1], "enqueued") || !strings.HasPrefix(rates.Legend[2], "done") {
		fail("the jobs-per-second chart's series %v, legend %v", rates.Names, rates.Legend)
	}
	shot("queue")

	// A hidden tab reads no series; shown again, the charts read at once. (The test overrides
	// document.visibilityState, which a headless tab cannot change, and fires the event.)
	seriesReads := func() int {
		var n int
		run("count series reads", chromedp.Evaluate(`performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/stats/series')).length`, &n))
		return n
	}
	visibility := func(state string) {
		run("tab "+state, chromedp.Evaluate(fmt.Sprintf(`Object.defineProperty(document, 'visibilityState', { value: %q, configurable: true });
			document.dispatchEvent(new Event('visibilitychange')); true`, state), nil))
	}
	visibility("hidden")
	run("clear the timings", chromedp.Evaluate(`performance.clearResourceTimings(); true`, nil))
	time.Sleep(5 * time.Second) // two and a half refresh periods of the 15-minute window
	if n := seriesReads(); n != 0 {
		fail("a hidden tab read the series %d times in 5 s", n)
	}
	visibility("visible")
	eventually(t, 5*time.Second, "the charts read again once the tab is shown", func() bool { return seriesReads() >= 3 })

	// The window picker redraws every chart over 1 h.
	run("pick 1 h", chromedp.Click(`.chart-windows button[data-window="1h"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`figure.chart[data-chart="queue-rates"][data-window="1h"]`, chromedp.ByQuery))
	run("back to 15 min", chromedp.Click(`.chart-windows button[data-window="15m"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`figure.chart[data-chart="queue-rates"][data-window="15m"]`, chromedp.ByQuery))

	// The other pages' charts are drawn with their units.
	for _, page := range []struct {
		hash   string
		charts map[string]string // key → y axis label
	}{
		{"#/index", map[string]string{"index-rates": "per second", "index-lag": "seconds"}},
		{"#/feed", map[string]string{"feed-published": "per second", "feed-backlog": "count", "feed-lag": "seconds"}},
		{"#/executor", map[string]string{"executor-tasks": "count", "executor-stages": "seconds"}},
		{"#/builds", map[string]string{"builds-events": "per minute"}},
	} {
		run("open "+page.hash, chromedp.Navigate("about:blank"), chromedp.Navigate(s.Base+"/ui/"+page.hash), chromedp.WaitReady("body[data-ready]", chromedp.ByQuery))
		for key, unit := range page.charts {
			eventually(t, 10*time.Second, "chart "+key+" drawn", func() bool { return chart(key) != nil })
			if c := chart(key); len(c.Axes) != 2 || !strings.HasPrefix(c.Axes[1], unit) || c.Window != "15m" {
				fail("chart %s on %s: %v, want a y axis in %s", key, page.hash, c, unit)
			}
		}
		shot(strings.TrimPrefix(page.hash, "#/"))
	}
}

// lastPoint compares a chart's last point with the API's answer at the same second: it returns
// the chart's values there by legend name and whether every series (by name, in order) has the
// same value in the API's answer. The chart's series are the API's in the API's order.
func lastPoint(c *chartData, a seriesAnswer) (map[string]float64, bool) {
	if len(c.Columns) != len(a.Series)+1 || len(c.Columns[0]) == 0 {
		return nil, false
	}
	times := c.Columns[0]
	at := -1
	for i := len(times) - 1; i >= 0; i-- {
		if slices.ContainsFunc(c.Columns[1:], func(col []*float64) bool { return col[i] != nil }) {
			at = i
			break
		}
	}
	if at < 0 || times[at] == nil {
		return nil, false
	}
	j := slices.Index(a.Times, int64(*times[at]))
	if j < 0 {
		return nil, false
	}
	out := map[string]float64{}
	for k, col := range c.Columns[1:] {
		chart, api := col[at], a.Series[k].Values[j]
		if (chart == nil) != (api == nil) || (chart != nil && *chart != *api) {
			return nil, false
		}
		if chart != nil {
			out[c.Names[k]] = *chart
		}
	}
	return out, true
}

// chartSum adds up a chart series' values (per-second rates at one-second steps: the events).
func chartSum(c *chartData, name string) float64 {
	k := slices.Index(c.Names, name)
	if k < 0 {
		return -1
	}
	var n float64
	for _, v := range c.Columns[k+1] {
		if v != nil {
			n += *v
		}
	}
	return n
}
