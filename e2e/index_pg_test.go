package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestIndexPostgres_BackfillKillRestartVerify: a real `redstate serve` follows a PostgreSQL
// table of indexRows rows (20,000; 100,000 under the soak tag) (backfill by keyset pagination, then pgoutput, the default plugin) while a writer moves rows
// between index keys, deletes, logically deletes and inserts; the process is SIGKILLed
// mid-stream and restarted; when the writer stops, `redstate index verify` finds the index equal
// to the table: nothing lost, nothing applied out of order.
func TestIndexPostgres_BackfillKillRestartVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	rds := redistest.StartStandalone(t)
	dsn := sqltest.PostgresDSN(t)
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	slot := fmt.Sprintf("e2e_%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		_, _ = db.ExecContext(context.Background(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
		_ = db.Close()
	})
	for _, q := range []string{
		"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, bra int, name text, yn int NOT NULL DEFAULT 1)",
		fmt.Sprintf("INSERT INTO items (id, las, cat, bra, name) SELECT g, g %% 13, g %% 7, g %% 3, 'item ' || g FROM generate_series(1, %d) g", indexRows),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
index:
  tables:
    - db: shop
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
  postgres:
    url: %q
    slot: %s
    database: shop
    tables: [items]
`, dsn, slot)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg, "--redis", rds.URL}

	var writes atomic.Int64
	stopWriter := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-stopWriter:
				return
			default:
			}
			id := 1 + r.IntN(indexRows+2000)
			var q string
			switch r.IntN(4) {
			case 0:
				q = fmt.Sprintf("UPDATE items SET cat = %d, name = 'moved' WHERE id = %d", r.IntN(7), id)
			case 1:
				q = fmt.Sprintf("DELETE FROM items WHERE id = %d", id)
			case 2:
				q = fmt.Sprintf("UPDATE items SET yn = %d WHERE id = %d", r.IntN(2), id)
			default:
				q = fmt.Sprintf("INSERT INTO items (id, las, cat, bra) VALUES (%d, %d, %d, NULL) ON CONFLICT (id) DO UPDATE SET las = excluded.las", id, r.IntN(13), r.IntN(7))
			}
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Error(err)
				return
			}
			writes.Add(1)
		}
	})

	s1 := startServer(t, args...)
	eventually(t, 2*time.Minute, "the backfill to start", func() bool { return strings.Contains(s1.Logs(), "backfill started") })
	time.Sleep(1500 * time.Millisecond)
	s1.kill()
	t.Logf("SIGKILL after %d writes", writes.Load())
	s2 := startServer(t, args...)
	time.Sleep(2 * time.Second)
	close(stopWriter)
	wg.Wait()
	t.Logf("writer stopped after %d writes", writes.Load())
	eventually(t, 3*time.Minute, "the stream to catch up", func() bool { return strings.Contains(s2.Logs(), "backfill done") })

	var out []byte
	deadline := time.Now().Add(4 * time.Minute)
	for {
		cmd := exec.Command(binary, append([]string{"index", "verify"}, args...)...)
		var stdout strings.Builder
		cmd.Stdout = &stdout
		err = cmd.Run()
		out = []byte(stdout.String())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("index verify still finds differences after 4 minutes: %s\nserver log tail:\n%s", out, tail(s2.Logs(), 4000))
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("verify: %s", out)
}
