package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestIndexPostgres_BackfillKillRestartVerify: a real `redstate serve` follows a PostgreSQL
// table of indexRows rows (20,000; 100,000 under the soak tag) (backfill by keyset pagination, then pgoutput, the default plugin) while a writer moves rows
// between index keys, deletes, logically deletes and inserts; the process is SIGKILLed
// mid-stream and restarted; when the writer stops, `redstate index verify` finds the index equal
// to the table: nothing lost, nothing applied out of order.
func TestIndexPostgres_BackfillKillRestartVerify(t *testing.T) {
	rds, db, dsn := indexTestSetup(t, sqltest.PostgresDSN)
	ctx := context.Background()
	slot := fmt.Sprintf("e2e_%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		_, _ = db.ExecContext(context.Background(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
	})
	for _, q := range []string{
		"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, bra int, name text, yn int NOT NULL DEFAULT 1)",
		fmt.Sprintf("INSERT INTO items (id, las, cat, bra, name) SELECT g, g %% 13, g %% 7, g %% 3, 'item ' || g FROM generate_series(1, %d) g", indexRows),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	args := indexItemsConfig(t, "shop", fmt.Sprintf(`  postgres:
    url: %q
    slot: %s
    database: shop
    tables: [items]
`, dsn, slot), rds.URL)

	w := startItemsWriter(t, db, indexRows, 3, "INSERT INTO items (id, las, cat, bra) VALUES (%d, %d, %d, NULL) ON CONFLICT (id) DO UPDATE SET las = excluded.las", false)

	s1 := startServer(t, args...)
	eventually(t, 2*time.Minute, "the backfill to start", func() bool { return strings.Contains(s1.Logs(), "backfill started") })
	time.Sleep(1500 * time.Millisecond)
	s1.kill()
	t.Logf("SIGKILL after %d writes (backfill done before: %v)", w.writes.Load(), strings.Contains(s1.Logs(), "backfill done"))
	s2 := startServer(t, args...)
	time.Sleep(2 * time.Second)
	w.stop()
	t.Logf("writer stopped after %d writes", w.writes.Load())
	// Streaming starts after the backfill, whether s2 finished it or s1 had (then s2 logs no
	// "backfill done": waiting for that line failed whenever s1 was faster than the kill).
	eventuallyLogs(t, 3*time.Minute, "the stream to start", s2, func() bool { return strings.Contains(s2.Logs(), "streaming with pgoutput") })

	out := verifyIndex(t, 4*time.Minute, s2.Logs, args...)
	t.Logf("verify: %s", out)
}
