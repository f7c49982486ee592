package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/sqldb/sqltest"
)

// leaseTTL is the binlog lease TTL of TestIndexMySQL_LeaseTakeoverAfterKill (the default).
const leaseTTL = 5 * time.Second

// TestIndexMySQL_LeaseTakeoverAfterKill: two `redstate serve` processes with the same MySQL
// source configuration follow a MariaDB table while a writer changes it; exactly one reads the
// binlog (redstate_index_source_leader 1); it is SIGKILLed, the other takes over within the
// lease TTL and a few seconds, and when the writer stops `redstate index verify --source mysql`
// finds the index equal to the table.
func TestIndexMySQL_LeaseTakeoverAfterKill(t *testing.T) {
	rds, db, dsn := indexTestSetup(t, sqltest.MariaDBDSN)
	ctx := context.Background()
	var name string
	if err := db.QueryRow("SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	const rows = 5000
	if _, err := db.ExecContext(ctx, "CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, bra int, name varchar(100), yn int NOT NULL DEFAULT 1)"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= rows; i += 500 {
		var q strings.Builder
		q.WriteString("INSERT INTO items (id, las, cat, bra, name) VALUES ")
		for j := i; j < i+500; j++ {
			if j > i {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "(%d, %d, %d, %d, 'item %d')", j, j%13, j%7, j%3, j)
		}
		if _, err := db.ExecContext(ctx, q.String()); err != nil {
			t.Fatal(err)
		}
	}
	args := indexItemsConfig(t, name, fmt.Sprintf(`  mysql:
    url: %q
    tables: [%s.items]
    lease-ttl: %s
`, strings.TrimSuffix(dsn, name), name, leaseTTL), rds.URL)

	w := startItemsWriter(t, db, rows, 5, "INSERT INTO items (id, las, cat, bra) VALUES (%d, %d, %d, NULL) ON DUPLICATE KEY UPDATE las = VALUES(las)", false)

	servers := []*server{startServer(t, args...), startServer(t, args...)}
	reading := func(s *server) bool {
		_, m, _ := s.do(t, http.MethodGet, "/metrics", "")
		return strings.Contains(string(m), `redstate_index_source_leader{source="mysql"} 1`)
	}
	var reader, standby *server
	eventually(t, time.Minute, "one serve to read the binlog", func() bool {
		for i, s := range servers {
			if reading(s) {
				reader, standby = s, servers[1-i]
				return true
			}
		}
		return false
	})
	eventually(t, 2*time.Minute, "the snapshot to finish", func() bool { return strings.Contains(reader.Logs(), "snapshot of table done") })
	if reading(standby) {
		t.Fatalf("both serve processes read the binlog")
	}
	if _, body, _ := standby.do(t, http.MethodGet, "/v1/overview", ""); !strings.Contains(string(body), "standby: another instance holds the binlog lease") {
		t.Errorf("standby's health does not say standby: %s", body)
	}
	time.Sleep(time.Second)
	reader.kill()
	killed := time.Now()
	t.Logf("SIGKILL of the reader after %d writes", w.writes.Load())
	eventually(t, leaseTTL+20*time.Second, "the standby to take over", func() bool { return reading(standby) })
	takeover := time.Since(killed)
	t.Logf("the standby took over %s after the kill (lease TTL %s)", takeover.Round(time.Millisecond), leaseTTL)
	if takeover > leaseTTL+10*time.Second {
		t.Errorf("takeover took %s, want within the lease TTL %s and a few seconds", takeover, leaseTTL)
	}
	if _, body, _ := standby.do(t, http.MethodGet, "/v1/overview", ""); !strings.Contains(string(body), "reading the binlog (fence ") {
		t.Errorf("new reader's health does not say it reads the binlog: %s", body)
	}
	time.Sleep(2 * time.Second)
	w.stop()
	t.Logf("writer stopped after %d writes", w.writes.Load())

	out := verifyIndex(t, 3*time.Minute, standby.Logs, append([]string{"--source", "mysql"}, args...)...)
	if !strings.Contains(out, `"missing":0,"stale":0,"extra":0`) {
		t.Fatalf("verify: %s", out)
	}
	t.Logf("verify: %s", out)
}
