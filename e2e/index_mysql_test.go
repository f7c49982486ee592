package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestIndexMySQL_SnapshotKillRestartVerify: a real `redstate serve` follows a MariaDB table of
// indexRows rows through its binary log (snapshot in keyset order, then the stream) while a
// writer moves rows between index keys, deletes, logically deletes and inserts; the process is
// SIGKILLed soon after the snapshot starts and restarted; MariaDB itself is then killed and
// restarted while the new process streams. When the writer stops, `redstate index verify
// --source mysql` finds the index equal to the table, and the metrics endpoint and
// /v1/index/status show the source's progress.
func TestIndexMySQL_SnapshotKillRestartVerify(t *testing.T) {
	rds, db, dsn := indexTestSetup(t, sqltest.MariaDBDSN)
	maria := sqltest.MariaDBTestServer(t)
	ctx := context.Background()
	var name string
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, bra int, name varchar(50), yn int NOT NULL DEFAULT 1)",
		fmt.Sprintf("INSERT INTO items (id, las, cat, bra, name) SELECT seq, seq %% 13, seq %% 7, seq %% 3, CONCAT('item ', seq) FROM seq_1_to_%d", indexRows),
		"ANALYZE TABLE items",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	args := indexItemsConfig(t, name, fmt.Sprintf(`  mysql:
    url: %q
    tables: [%s.items]
`, strings.TrimSuffix(dsn, name), name), rds.URL)

	// The writer goes on through MariaDB's restart: a failed statement is retried later.
	w := startItemsWriter(t, db, indexRows, 5, "INSERT INTO items (id, las, cat, bra) VALUES (%d, %d, %d, NULL) ON DUPLICATE KEY UPDATE las = VALUES(las)", true)

	s1 := startServer(t, args...)
	eventually(t, 2*time.Minute, "the snapshot to start", func() bool { return strings.Contains(s1.Logs(), "snapshot started") })
	time.Sleep(300 * time.Millisecond)
	s1.kill()
	t.Logf("SIGKILL after %d writes (snapshot done before: %v)", w.writes.Load(), strings.Contains(s1.Logs(), "streaming the binary log"))
	s2 := startServer(t, args...)
	eventually(t, 3*time.Minute, "the stream to start", func() bool { return strings.Contains(s2.Logs(), "streaming the binary log") })
	if strings.Count(s2.Logs(), "snapshot started") > 0 {
		t.Error("the restarted process took a new snapshot instead of resuming the recorded one")
	}
	time.Sleep(time.Second)
	maria.Restart(t, true)
	t.Logf("MariaDB killed and restarted after %d writes", w.writes.Load())
	eventually(t, 2*time.Minute, "the stream to reconnect", func() bool { return strings.Count(s2.Logs(), "streaming the binary log") >= 2 })
	time.Sleep(time.Second)
	w.stop()
	t.Logf("writer stopped after %d writes (%d failed during the restart)", w.writes.Load(), w.failures.Load())

	out := verifyIndex(t, 4*time.Minute, s2.Logs, append([]string{"--source", "mysql"}, args...)...)
	if !strings.Contains(out, `"missing":0,"stale":0,"extra":0`) {
		t.Fatalf("verify: %s", out)
	}
	t.Logf("verify: %s", out)

	_, metrics, _ := s2.do(t, http.MethodGet, "/metrics", "")
	for _, m := range []string{"redstate_index_source_events_total", "redstate_index_source_lag_bytes", "redstate_index_source_lag_seconds",
		"redstate_index_source_pending_events", "redstate_index_source_position_file", "redstate_index_source_position_bytes",
		"redstate_index_backfill_rows_total", "redstate_index_backfill_rows_estimate"} {
		if !strings.Contains(string(metrics), m+`{source="mysql"}`) {
			t.Errorf("metrics lack %s{source=\"mysql\"}", m)
		}
	}
	code, body, _ := s2.do(t, http.MethodGet, "/v1/index/status", "")
	var st struct {
		Sources []struct {
			Name            string  `json:"name"`
			Position        string  `json:"position"`
			Events          int64   `json:"events"`
			SnapshotPercent float64 `json:"snapshotPercent"`
			Streaming       bool    `json:"streaming"`
		} `json:"sources"`
	}
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil || len(st.Sources) != 1 {
		t.Fatalf("index status %d: %s (%v)", code, body, err)
	}
	if src := st.Sources[0]; src.Name != "mysql" || !strings.HasPrefix(src.Position, "binlog.") || src.Events == 0 || src.SnapshotPercent != 100 || !src.Streaming {
		t.Errorf("mysql source status: %s", body)
	}
	// The dashboard's Index page shows the same progress.
	if cells := dashboardSourceCells(t, s2); cells != nil {
		if len(cells) < 10 || cells[0] != "mysql" || !strings.HasPrefix(cells[1], "binlog.") || cells[2] != "100.0 %" || cells[8] == "0" {
			t.Errorf("dashboard sources row = %q, want mysql, its position, snapshot 100.0 %%, events > 0", cells)
		}
		t.Logf("dashboard sources row: %q", cells)
	}
	s2.stop(t)
}

// dashboardSourceCells opens the dashboard's Index page in chromium (a server without tokens:
// no login) and returns the cells of its Sources table; nil without chromium.
func dashboardSourceCells(t *testing.T, s *server) []string {
	t.Helper()
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Log("chromium is not installed: the dashboard is not checked")
		return nil
	}
	ctx, cancel := startBrowser(t, browser, 2*time.Minute, nil)
	defer cancel()
	var cells []string
	if err := chromedp.Run(ctx, chromedp.Navigate(s.Base+"/ui/#/index"), chromedp.WaitVisible("//h2[text()='Sources']", chromedp.BySearch),
		chromedp.Evaluate(`[...document.querySelectorAll('#view .scroll table')[1].querySelectorAll('tbody td')].map(td => td.textContent)`, &cells)); err != nil {
		t.Fatalf("dashboard index page: %v", err)
	}
	return cells
}
