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
)

// indexTestSetup skips the test under -short (it runs real processes), starts Redis and
// opens a fresh database by dsnOf (sqltest.MariaDBDSN, sqltest.PostgresDSN), closed when the
// test ends; it returns them with the database's DSN.
func indexTestSetup(t *testing.T, dsnOf func(testing.TB) string) (*redistest.Server, *sqldb.DB, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	rds := redistest.StartStandalone(t)
	dsn := dsnOf(t)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return rds, db, dsn
}

// indexItemsConfig writes a redstate.yaml whose index declares the items table of the CDC
// e2e tests in database db, followed by source (the source's block, indented under index:),
// and returns the arguments of a redstate command using it and Redis at redisURL.
func indexItemsConfig(t *testing.T, db, source, redisURL string) []string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
index:
  tables:
    - db: %s
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
`, db)+source), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg, "--redis", redisURL}
}

// itemsWriter changes random rows of the items table until stopped: it moves rows between
// index keys, deletes, logically deletes and inserts.
type itemsWriter struct {
	// writes counts the statements that succeeded, failures those that failed and were retried.
	writes, failures atomic.Int64
	stopc            chan struct{}
	once             sync.Once
	wg               sync.WaitGroup
}

// startItemsWriter starts an itemsWriter on ids 1 to rows+2000 with the random source
// PCG(seed, seed+1); upsert is the insert statement's format, given id, las and cat. A failed
// statement fails the test and ends the writer, unless retry is set: then it is counted and the
// writer goes on 50ms later. The writer is stopped at the latest when the test ends.
func startItemsWriter(t *testing.T, db *sqldb.DB, rows int, seed uint64, upsert string, retry bool) *itemsWriter {
	w := &itemsWriter{stopc: make(chan struct{})}
	w.wg.Go(func() {
		r := rand.New(rand.NewPCG(seed, seed+1))
		for {
			select {
			case <-w.stopc:
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
				q = fmt.Sprintf(upsert, id, r.IntN(13), r.IntN(7))
			}
			if _, err := db.ExecContext(context.Background(), q); err != nil {
				if !retry {
					t.Error(err)
					return
				}
				w.failures.Add(1)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			w.writes.Add(1)
		}
	})
	t.Cleanup(w.stop)
	return w
}

// stop stops the writer and waits for it; it may be called more than once.
func (w *itemsWriter) stop() {
	w.once.Do(func() { close(w.stopc) })
	w.wg.Wait()
}

// verifyIndex runs `redstate index verify` with verifyArgs until it exits 0, every 2 seconds
// for at most within, and returns its output; after that it fails the test with the tail of
// logs (the server's).
func verifyIndex(t *testing.T, within time.Duration, logs func() string, verifyArgs ...string) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		cmd := exec.Command(binary, append([]string{"index", "verify"}, verifyArgs...)...)
		var stdout strings.Builder
		cmd.Stdout = &stdout
		err := cmd.Run()
		out := stdout.String()
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("index verify %s still finds differences after %s: %s\nserver log tail:\n%s",
				strings.Join(verifyArgs, " "), within, out, tail(logs(), 4000))
		}
		time.Sleep(2 * time.Second)
	}
}
