package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
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
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	rds := redistest.StartStandalone(t)
	dsn := sqltest.MariaDBDSN(t)
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
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
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
index:
  tables:
    - db: %[1]s
      table: items
      key: id
      delete-column: yn
      columns:
        - {name: id, type: long}
        - {name: las, type: int}
        - {name: cat, type: int}
        - {name: bra, type: "int?"}
        - {name: name, type: "string?"}
      dimensions:
        - [{code: las, column: las}, {code: cat, column: cat}]
        - [{code: las, column: las}, {code: cat, column: cat}, {code: bra, column: bra}]
  mysql:
    url: %[2]q
    tables: [%[1]s.items]
    lease-ttl: %[3]s
`, name, strings.TrimSuffix(dsn, name), leaseTTL)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg, "--redis", rds.URL}

	var writes atomic.Int64
	stopWriter := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(5, 6))
		for {
			select {
			case <-stopWriter:
				return
			default:
			}
			id := 1 + r.IntN(rows+2000)
			var q string
			switch r.IntN(4) {
			case 0:
				q = fmt.Sprintf("UPDATE items SET cat = %d, name = 'moved' WHERE id = %d", r.IntN(7), id)
			case 1:
				q = fmt.Sprintf("DELETE FROM items WHERE id = %d", id)
			case 2:
				q = fmt.Sprintf("UPDATE items SET yn = %d WHERE id = %d", r.IntN(2), id)
			default:
				q = fmt.Sprintf("INSERT INTO items (id, las, cat, bra) VALUES (%d, %d, %d, NULL) ON DUPLICATE KEY UPDATE las = VALUES(las)", id, r.IntN(13), r.IntN(7))
			}
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Error(err)
				return
			}
			writes.Add(1)
		}
	})
	defer func() {
		select {
		case <-stopWriter:
		default:
			close(stopWriter)
		}
		wg.Wait()
	}()

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
	t.Logf("SIGKILL of the reader after %d writes", writes.Load())
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
	close(stopWriter)
	wg.Wait()
	t.Logf("writer stopped after %d writes", writes.Load())

	var out string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		cmd := exec.Command(binary, append([]string{"index", "verify", "--source", "mysql"}, args...)...)
		var stdout strings.Builder
		cmd.Stdout = &stdout
		err = cmd.Run()
		out = stdout.String()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("index verify still finds differences after 3 minutes: %s\nserver log tail:\n%s", out, tail(standby.Logs(), 4000))
		}
		time.Sleep(2 * time.Second)
	}
	if !strings.Contains(out, `"missing":0,"stale":0,"extra":0`) {
		t.Fatalf("verify: %s", out)
	}
	t.Logf("verify: %s", out)
}
