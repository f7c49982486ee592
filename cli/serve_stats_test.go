package cli

import (
	"encoding/json"
	"net/http"
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
// as three build events (per minute, summed over the 1 s points: 3 × 60), and the queues'
// sizes are sampled. On memory and on Redis.
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
			// A point is answered once its second has ended and been flushed (about 2 s).
			deadline := time.Now().Add(15 * time.Second)
			for {
				events := statsSum(t, base, "metric=builds.events")[""]
				sizes := statsSum(t, base, "metric=queue.size&label.queue=report:queue&label.state=pending")
				if events[0] == 3*60 && len(sizes) == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("builds.events sum = %v (want 180: 3 events per minute-rate points), queue.size series = %v", events, sizes)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
