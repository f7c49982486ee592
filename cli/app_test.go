package cli

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/redstate/redstate/redistest"
)

// TestServe_OverviewNamesEachBlocksBackend: the overview is the components' Health, so each
// block names the backend it really runs on (the executor, index and feed used to repeat the
// queue's), and a block that is not configured says off.
func TestServe_OverviewNamesEachBlocksBackend(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want map[string][2]string // block → backend, status
	}{
		{"memory", nil, map[string][2]string{
			"builds": {"memory", "ok"}, "queue": {"memory (records: sql)", "ok"}, "executor": {"memory", "ok"},
			"index": {"", "off"}, "feed": {"memory + sql (sqlite)", "ok"}, "stats": {"memory", "ok"}}},
		{"redis", []string{"--redis", ""}, map[string][2]string{
			"builds": {"redis", "ok"}, "queue": {"redis (records: sql)", "ok"}, "executor": {"redis", "ok"},
			"index": {"", "off"}, "feed": {"redis + sql (sqlite)", "ok"}, "stats": {"redis", "ok"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if len(args) == 2 {
				args = []string{"--redis", redistest.StartStandalone(t).URL}
			}
			base, _, _, _ := startServe(t, args...)
			status, body := request(t, http.MethodGet, base+"/v1/overview", "")
			if status != http.StatusOK {
				t.Fatalf("overview = %d %s", status, body)
			}
			var o struct {
				Blocks []struct{ Name, Backend, Status string }
			}
			if err := json.Unmarshal([]byte(body), &o); err != nil {
				t.Fatal(err)
			}
			got := map[string][2]string{}
			for _, b := range o.Blocks {
				got[b.Name] = [2]string{b.Backend, b.Status}
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s = %q, want %q (overview %s)", name, got[name], want, body)
				}
			}
			if len(o.Blocks) != len(tc.want) {
				t.Errorf("%d blocks, want %d: %s", len(o.Blocks), len(tc.want), body)
			}
		})
	}
}
