package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
)

// statsAPI is an API whose history holds one flush made 5 s before now.
func statsAPI(t *testing.T) *testAPI {
	t.Helper()
	now := time.Now()
	past := func() time.Time { return now.Add(-5 * time.Second) }
	store := history.NewMemoryStore(nil)
	rec, err := history.NewRecorder(history.Options{Store: store, Now: past})
	if err != nil {
		t.Fatal(err)
	}
	rec.Add(history.QueueDone, 4, "report:queue")
	rec.Add(history.QueueDone, 1, "other")
	rec.Set(history.QueueSize, 9, "report:queue", "pending")
	rec.Observe(history.QueueLatency, 0.2, "report:queue")
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	return newTestAPI(t, func(_ *Config, d *Deps) { d.History = history.NewReader(store, nil) })
}

func TestStatsSeries_ColumnarWithLabelFilter(t *testing.T) {
	a := statsAPI(t)
	r := a.do(http.MethodGet, "/v1/stats/series?metric=queue.done&metric=queue.size&metric=queue.latency.p99&window=15m&label.queue=report:queue", "")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var res history.Result
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Window != "15m" || res.Step != "1s" || len(res.Times) != 900 || len(res.Series) != 3 {
		t.Fatalf("window %s step %s times %d series %d", res.Window, res.Step, len(res.Times), len(res.Series))
	}
	for _, s := range res.Series {
		if len(s.Values) != len(res.Times) || s.Labels["queue"] != "report:queue" {
			t.Fatalf("series %s: %d values, labels %v", s.Metric, len(s.Values), s.Labels)
		}
		var found []float64
		for _, v := range s.Values {
			if v != nil && *v != 0 {
				found = append(found, *v)
			}
		}
		want := map[string]float64{"queue.done": 4, "queue.size": 9}[s.Metric]
		if s.Metric == "queue.latency.p99" {
			if len(found) != 1 || found[0] <= 0.1 || found[0] > 0.25 {
				t.Errorf("p99 = %v, want one value in the bucket (0.1, 0.25]", found)
			}
			continue
		}
		if len(found) != 1 || found[0] != want {
			t.Errorf("%s non-zero values = %v, want [%v]", s.Metric, found, want)
		}
	}
}

// A chart holding the window polls with since for the points after its last one.
func TestStatsSeries_SinceAnswersTheNewPointsOnly(t *testing.T) {
	a := statsAPI(t)
	var full, tail history.Result
	r := a.do(http.MethodGet, "/v1/stats/series?metric=queue.done&label.queue=report:queue", "")
	if err := json.Unmarshal(r.body, &full); err != nil {
		t.Fatal(err)
	}
	last := full.Times[len(full.Times)-1]
	r = a.do(http.MethodGet, fmt.Sprintf("/v1/stats/series?metric=queue.done&label.queue=report:queue&since=%d", last-3), "")
	if err := json.Unmarshal(r.body, &tail); err != nil {
		t.Fatal(err)
	}
	if len(tail.Times) < 3 || tail.Times[0] != last-2 || len(tail.Series) != 1 || len(tail.Series[0].Values) != len(tail.Times) {
		t.Fatalf("since %d: times %v, series %+v", last-3, tail.Times, tail.Series)
	}
	r = a.do(http.MethodGet, fmt.Sprintf("/v1/stats/series?metric=queue.done&since=%d", last+3600), "")
	if err := json.Unmarshal(r.body, &tail); err != nil || len(tail.Times) != 0 || len(tail.Series[0].Values) != 0 {
		t.Fatalf("since the future: %s", r.body)
	}
}

func TestStatsSeries_BadInputHasStableCodes(t *testing.T) {
	a := statsAPI(t)
	for _, path := range []string{
		"/v1/stats/series?metric=queue.done&window=2h",
		"/v1/stats/series?metric=queue.nope",
		"/v1/stats/series",
		"/v1/stats/series?metric=feed.published&label.queue=x",
		"/v1/stats/series?metric=queue.done&label.bogus=x",
		"/v1/stats/series?metric=queue.done&since=yesterday",
	} {
		wantError(t, a.do(http.MethodGet, path, ""), http.StatusBadRequest, redstate.EINVALID)
	}
	none := newTestAPI(t, nil)
	wantError(t, none.do(http.MethodGet, "/v1/stats/series?metric=queue.done", ""), http.StatusNotFound, redstate.ENOTFOUND)
}

func TestStatsMetrics_ListsKindsUnitsAndLabelsSeen(t *testing.T) {
	a := statsAPI(t)
	r := a.do(http.MethodGet, "/v1/stats/metrics", "")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var c statsCatalog
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatal(err)
	}
	byName := map[string]history.MetricInfo{}
	for _, m := range c.Metrics {
		byName[m.Name] = m
	}
	done := byName["queue.done"]
	if done.Kind != history.KindCounter || done.Unit != "1/s" || len(done.Seen) != 2 || done.Seen[0]["queue"] != "other" {
		t.Errorf("queue.done = %+v", done)
	}
	if p := byName["queue.latency.p50"]; p.Kind != history.KindQuantile || p.Unit != "s" || len(p.Seen) != 1 {
		t.Errorf("queue.latency.p50 = %+v", p)
	}
	if len(c.Windows) != 3 || c.Windows[2].Step != "1m" || c.Windows[2].Points != 1440 {
		t.Errorf("windows = %+v", c.Windows)
	}
}
