package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// statsSum reads a metric's series over 15 minutes and returns, per series (by its first label
// value), the sum and the last non-null value.
func statsSum(t *testing.T, base, query string) map[string][2]float64 {
	t.Helper()
	status, body := request(t, http.MethodGet, base+"/v1/stats/series?window=15m&"+query, "")
	if status != http.StatusOK {
		t.Fatalf("stats = %d %s", status, body)
	}
	var res struct {
		Series []struct {
			Labels map[string]string
			Values []*float64
		}
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	for _, s := range res.Series {
		key := s.Labels["queue"] + s.Labels["state"]
		var sum, last float64
		for _, v := range s.Values {
			if v != nil {
				sum, last = sum+*v, *v
			}
		}
		out[key] = [2]float64{sum, last}
	}
	return out
}

// The blocks of a served process record into the statistics history: three build saves read
// as three build events (per minute, summed over the 1 s points: 3 × 60), two posts as two
// published with their fan-out jobs done, a delivery lag and an empty backlog, and the queues'
// sizes are sampled; /metrics and the overview report the history's size. On memory and on
// Redis.
func TestServe_BlocksRecordIntoTheHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"memory", func(*testing.T) []string { return nil }},
		{"redis", func(t *testing.T) []string { return []string{"--redis", redistest.StartStandalone(t).URL} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _, _, _ := startServe(t, tc.args(t)...)
			for range 3 {
				if status, body := request(t, http.MethodPut, base+"/v1/builds/"+testBuildID, testDoc); status != http.StatusOK {
					t.Fatalf("PUT = %d %s", status, body)
				}
			}
			for range 2 {
				if status, body := request(t, http.MethodPost, base+"/v1/feed/posts", `{"userId":1001,"title":"t"}`); status != http.StatusCreated {
					t.Fatalf("publish = %d %s", status, body)
				}
			}
			awaitStats(t, func() string {
				events := statsSum(t, base, "metric=builds.events")[""]
				sizes := statsSum(t, base, "metric=queue.size&label.queue=report:queue&label.state=pending")
				published := statsSum(t, base, "metric=feed.published")[""]
				backlog := statsSum(t, base, "metric=feed.fanout_backlog")[""]
				delivered := statsSum(t, base, "metric=feed.delivery_lag")
				fanouts := statsSum(t, base, "metric=queue.done&label.queue=feed:fanout")["feed:fanout"]
				if events[0] == 3*60 && len(sizes) == 1 && published[0] == 2 && backlog[1] == 0 && len(delivered) == 1 && fanouts[0] == 2 {
					return ""
				}
				return fmt.Sprintf("builds.events sum = %v (want 180: 3 events per minute-rate points), queue.size series = %v, "+
					"feed.published = %v (want 2), backlog (sum, last) = %v (want last 0), delivery lag = %v, fan-out jobs done = %v (want 2)",
					events, sizes, published, backlog, delivered, fanouts)
			})
			_, metricsText := request(t, http.MethodGet, base+"/metrics", "")
			for _, m := range []string{"redstate_stats_history_series ", "redstate_stats_history_keys ", "redstate_stats_history_bytes ", "redstate_stats_history_dropped_total 0"} {
				if !strings.Contains(metricsText, m) {
					t.Errorf("/metrics has no %q", m)
				}
			}
			_, overview := request(t, http.MethodGet, base+"/v1/overview", "")
			if !strings.Contains(overview, `"name":"stats"`) || !strings.Contains(overview, "keys,") {
				t.Errorf("the overview does not report the history's size: %s", overview)
			}
		})
	}
}

// awaitStats polls check until it returns "" or fails the test with its last answer: a point
// is answered once its second has ended and been flushed (about 2 s).
func awaitStats(t *testing.T, check func() string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two instances behind a load balancer draw the same chart: events recorded by either are read
// summed from both.
func TestServe_TwoInstancesReadTheSameHistory(t *testing.T) {
	url := redistest.StartStandalone(t).URL
	a, _, _, _ := startServe(t, "--redis", url)
	b, _, _, _ := startServe(t, "--redis", url)
	for i, base := range []string{a, a, b} {
		id := fmt.Sprintf("550e8400-e29b-41d4-a716-44665544000%d", i)
		doc := strings.Replace(testDoc, testBuildID, id, 1)
		if status, body := request(t, http.MethodPut, base+"/v1/builds/"+id, doc); status != http.StatusOK {
			t.Fatalf("PUT = %d %s", status, body)
		}
	}
	awaitStats(t, func() string {
		fromA, fromB := statsSum(t, a, "metric=builds.events")[""], statsSum(t, b, "metric=builds.events")[""]
		if fromA[0] == 3*60 && fromB[0] == 3*60 {
			return ""
		}
		return fmt.Sprintf("builds.events from A = %v, from B = %v, want 180 from both (2 + 1 events)", fromA, fromB)
	})
}
