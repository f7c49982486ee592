package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestIndexCounters_SharedByInstances runs two servers on one Redis: each applies its own
// events, and both answer GET /v1/index/status with the counts of both (each adds its counts
// to Redis every 5 s); a server that stops adds its last counts on the way out.
func TestIndexCounters_SharedByInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	rds := redistest.StartStandalone(t)
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, []byte(`index:
  tables:
    - db: shop
      table: orders
      key: id
      columns:
        - {name: id, type: long}
        - {name: region, type: int}
      dimensions:
        - [{code: reg, column: region}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--redis", rds.URL, "--config", cfg}
	s1, s2 := startServer(t, args...), startServer(t, args...)
	post := func(s *server, events string) {
		t.Helper()
		if code, body, _ := s.do(t, http.MethodPost, "/v1/index/events", `{"format":"canal","events":[`+events+`]}`); code != http.StatusOK {
			t.Fatalf("post events: %d %s", code, body)
		}
	}
	event := func(table string, id, es int) string {
		return fmt.Sprintf(`{"data":[{"id":"%d","region":"7"}],"database":"shop","table":%q,"type":"INSERT","es":%d,"id":1}`, id, table, es)
	}
	post(s1, event("orders", 1, 2000)+","+event("orders", 2, 2000)+","+event("orders", 1, 1000)) // 2 applied, 1 stale
	post(s2, event("orders", 3, 2000)+","+event("payments", 9, 2000))                            // 1 applied, 1 skipped
	type status struct {
		Scope  string
		Tables []struct {
			DB, Table              string
			Applied, Stale, Failed int64
		}
		Skipped int64
	}
	read := func(s *server) status {
		t.Helper()
		code, body, _ := s.do(t, http.MethodGet, "/v1/index/status", "")
		var st status
		if code != http.StatusOK || json.Unmarshal(body, &st) != nil || len(st.Tables) != 1 {
			t.Fatalf("index status: %d %s", code, body)
		}
		return st
	}
	shows := func(s *server, applied, stale, skipped int64) func() bool {
		return func() bool {
			st := read(s)
			return st.Scope == "shared" && st.Tables[0].Applied == applied && st.Tables[0].Stale == stale && st.Skipped == skipped
		}
	}
	for name, s := range map[string]*server{"s1": s1, "s2": s2} {
		eventually(t, 30*time.Second, name+" showing both instances' counts (3 applied, 1 stale, 1 skipped)", shows(s, 3, 1, 1))
	}

	post(s1, event("orders", 4, 2000))
	s1.stop(t) // its last counts are flushed on shutdown, well before the next 5 s flush
	if !shows(s2, 4, 1, 1)() {
		t.Fatalf("after s1 stopped, s2 shows %+v; want 4 applied", read(s2))
	}
}
