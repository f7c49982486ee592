package pgsource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/pgsource"
	"github.com/redstate/redstate/redistest"
)

// verify compares every index entry of the items table with the table (index.Verify, the path
// of redstate index verify).
func (f *fixture) verify(t *testing.T) index.VerifyReport {
	t.Helper()
	ctx := context.Background()
	rep, err := f.ix.Verify(ctx, "shop", "items", func(yield func(map[string]*string) bool) error {
		rows, err := f.db.QueryContext(ctx, "SELECT row_to_json(t)::text FROM items t")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var js string
			if err := rows.Scan(&js); err != nil {
				return err
			}
			var cols map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &cols); err != nil {
				return err
			}
			if !yield(index.TextRow(cols)) {
				return nil
			}
		}
		return rows.Err()
	}, index.EncodingPostgres, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// slotLSN returns the slot's confirmed_flush_lsn.
func (f *fixture) slotLSN(t *testing.T) uint64 {
	t.Helper()
	var text *string
	if err := f.db.QueryRowContext(context.Background(), "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", f.opt.Slot).Scan(&text); err != nil {
		t.Fatal(err)
	}
	if text == nil {
		return 0
	}
	lsn, err := index.ParseLSN(*text)
	if err != nil {
		t.Fatal(err)
	}
	return lsn
}

// walLSN returns the server's current WAL position.
func (f *fixture) walLSN(t *testing.T) uint64 {
	t.Helper()
	var text string
	if err := f.db.QueryRowContext(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&text); err != nil {
		t.Fatal(err)
	}
	lsn, err := index.ParseLSN(text)
	if err != nil {
		t.Fatal(err)
	}
	return lsn
}

func (f *fixture) exec(t *testing.T, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := f.db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// logs is a concurrency-safe log sink for a source's logger.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns the logs with slog's quoting of values undone.
func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.ReplaceAll(l.buf.String(), `\"`, `"`)
}

// capture sends the source's logs to the returned sink.
func (f *fixture) capture() *logs {
	l := &logs{}
	f.opt.Logger = slog.New(slog.NewTextHandler(l, nil))
	return l
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPgoutput_SlotNeverPassesApplied: while Redis is down no change can be applied, and the
// slot's confirmed_flush_lsn stays before every change written meanwhile (the source retries,
// confirming nothing new); once Redis is back the index converges to the table.
func TestPgoutput_SlotNeverPassesApplied(t *testing.T) {
	f := setup(t, 500, index.PluginPgoutput, redistest.WithAppendOnly(true))
	stop := f.run(t)
	defer stop()
	f.writes(t, 1, 20)
	f.waitEqual(t)
	f.redis.Stop(t)
	before := f.walLSN(t)
	f.writes(t, 21, 50)
	// The source reads the changes, fails to apply them and reconnects, for several status
	// intervals (100ms): the slot must not move past the outage's first change.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if got := f.slotLSN(t); got > before {
			t.Fatalf("slot confirmed %s while Redis was down, past %s", index.FormatLSN(got), index.FormatLSN(before))
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.redis.Restart(t)
	f.waitEqual(t)
	waitFor(t, "the slot to confirm the applied changes", func() bool { return f.slotLSN(t) > before })
}

// TestPgoutput_IdleConfirmsServerPosition: WAL written for tables the publication does not
// follow reaches the slot's confirmed position through keepalives, so an idle source does not
// hold WAL.
func TestPgoutput_IdleConfirmsServerPosition(t *testing.T) {
	f := setup(t, 10, index.PluginPgoutput)
	stop := f.run(t)
	defer stop()
	f.waitEqual(t)
	f.exec(t, "CREATE TABLE other (id int PRIMARY KEY, v text)", "INSERT INTO other SELECT g, 'x' FROM generate_series(1, 1000) g")
	after := f.walLSN(t)
	waitFor(t, "the slot to pass unrelated WAL", func() bool { return f.slotLSN(t) >= after })
}

// TestPgoutput_BigTransactionAndKeyChange: one transaction updating 6,000 rows (more than a
// batch of 1,000, applied in parts) and one changing keys of rows end with the index equal to
// the table; the old keys are gone.
func TestPgoutput_BigTransactionAndKeyChange(t *testing.T) {
	f := setup(t, 6000, index.PluginPgoutput)
	f.opt.BatchChanges = 1000
	stop := f.run(t)
	defer stop()
	f.waitEqual(t)
	f.exec(t, "UPDATE items SET cat = cat + 100, name = 'big'")
	f.waitEqual(t)
	f.exec(t, "UPDATE items SET id = id + 1000000 WHERE id <= 50")
	f.waitEqual(t)
	if rep := f.verify(t); rep.Rows != 6000 || !rep.Clean() {
		t.Fatalf("verify: %+v", rep)
	}
}

// TestPgoutput_ReplicaIdentityRefused: tables whose deletes would not carry the index key are
// refused at start with the statement to run, before a publication exists (PostgreSQL would
// then refuse the application's UPDATE and DELETE); fixing the table lets the source start.
func TestPgoutput_ReplicaIdentityRefused(t *testing.T) {
	cases := map[string]struct{ table, want string }{
		"no primary key": {"CREATE TABLE items (id bigint NOT NULL, las int NOT NULL, cat int NOT NULL, bra int, name text, yn int NOT NULL DEFAULT 1)",
			`"public"."items" has no primary key and REPLICA IDENTITY DEFAULT: its deletes carry no key; run ALTER TABLE "public"."items" REPLICA IDENTITY FULL`},
		"primary key without the index key": {"CREATE TABLE items (uid serial PRIMARY KEY, id bigint NOT NULL, las int NOT NULL, cat int NOT NULL, bra int, name text, yn int NOT NULL DEFAULT 1)",
			`the primary key (uid) of "public"."items" does not include the index key id`},
		"nothing": {"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, bra int, name text, yn int NOT NULL DEFAULT 1); ALTER TABLE items REPLICA IDENTITY NOTHING",
			`"public"."items" has REPLICA IDENTITY NOTHING`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := setup(t, 0, index.PluginPgoutput)
			f.exec(t, "DROP TABLE items", c.table, "INSERT INTO items (id, las, cat) VALUES (1, 1, 1), (2, 2, 2)")
			l := f.capture()
			stop := f.run(t)
			waitFor(t, "the replica identity error", func() bool { return strings.Contains(l.String(), c.want) })
			stop()
			var pubs int
			if err := f.db.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_publication").Scan(&pubs); err != nil || pubs != 0 {
				t.Fatalf("publications: %d, %v; want none", pubs, err)
			}
			f.exec(t, "DELETE FROM items WHERE id = 2", "ALTER TABLE items REPLICA IDENTITY FULL")
			stop = f.run(t)
			defer stop()
			f.exec(t, "DELETE FROM items WHERE id = 1", "INSERT INTO items (id, las, cat) VALUES (3, 3, 3)")
			f.waitEqual(t)
		})
	}
}

// TestPgoutput_SlotOfAnotherPlugin: a slot created with wal2json is not read with pgoutput; the
// error says how to keep it or replace it.
func TestPgoutput_SlotOfAnotherPlugin(t *testing.T) {
	f := setup(t, 10, index.PluginPgoutput)
	f.exec(t, fmt.Sprintf("SELECT pg_create_logical_replication_slot('%s', 'wal2json')", f.opt.Slot))
	l := f.capture()
	stop := f.run(t)
	defer stop()
	want := fmt.Sprintf("replication slot %s was created with plugin wal2json, not pgoutput: set index.postgres.plugin: wal2json to keep it, or drop it (SELECT pg_drop_replication_slot('%s'))", f.opt.Slot, f.opt.Slot)
	waitFor(t, "the plugin error", func() bool { return strings.Contains(l.String(), want) })
}

// TestPgoutput_NamedPublication: a named publication must exist and include the tables, with
// every column the index reads; the errors name the statement, and once it is run the source
// streams through it.
func TestPgoutput_NamedPublication(t *testing.T) {
	f := setup(t, 100, index.PluginPgoutput)
	f.opt.Publication = "mine"
	l := f.capture()
	stop := f.run(t)
	waitFor(t, "the missing publication error", func() bool {
		return strings.Contains(l.String(), `publication mine does not exist: run CREATE PUBLICATION "mine" FOR TABLE "public"."items"`)
	})
	stop()
	f.exec(t, "CREATE TABLE other (id int PRIMARY KEY)", "CREATE PUBLICATION mine FOR TABLE other")
	stop = f.run(t)
	waitFor(t, "the missing table error", func() bool {
		return strings.Contains(l.String(), `publication mine lacks "public"."items": run ALTER PUBLICATION "mine" ADD TABLE "public"."items"`)
	})
	stop()
	f.exec(t, "ALTER PUBLICATION mine ADD TABLE items (id, las, yn, bra, name)")
	stop = f.run(t)
	waitFor(t, "the column list error", func() bool {
		return strings.Contains(l.String(), `publication mine has a row filter, or a column list without a column the index reads, on "public"."items"`)
	})
	stop()
	f.exec(t, "ALTER PUBLICATION mine SET TABLE other, items")
	stop = f.run(t)
	defer stop()
	f.writes(t, 1, 10)
	f.waitEqual(t)
}

// TestNew_PgoutputNeedsURL: pgoutput opens its replication connection from the URL.
func TestNew_PgoutputNeedsURL(t *testing.T) {
	f := setup(t, 0, index.PluginPgoutput)
	f.opt.URL = ""
	if _, err := pgsource.New(f.ix, f.opt); err == nil || !strings.Contains(err.Error(), "needs the database URL") {
		t.Fatalf("err = %v", err)
	}
}

// TestPgoutput_UnchangedToastDeadLettered: an update that leaves a TOASTed value of a declared
// column unchanged does not carry it under REPLICA IDENTITY DEFAULT: the change is
// dead-lettered with the statement to run, never applied with the column missing; under FULL
// the old row supplies the value and the index ends equal to the table.
func TestPgoutput_UnchangedToastDeadLettered(t *testing.T) {
	f := setup(t, 10, index.PluginPgoutput)
	f.exec(t, "ALTER TABLE items ALTER COLUMN name SET STORAGE EXTERNAL") // out of line, uncompressed
	stop := f.run(t)
	defer stop()
	f.exec(t, "UPDATE items SET name = repeat('x', 10000) WHERE id = 1")
	f.waitEqual(t)
	f.exec(t, "UPDATE items SET cat = 42 WHERE id = 1")
	ctx := context.Background()
	waitFor(t, "the dead letter", func() bool {
		entries, err := f.opt.Redis.LRange(ctx, f.ix.DeadLetterKey(), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(entries) == 1 && strings.Contains(entries[0], `unchanged TOASTed value of name not sent: run ALTER TABLE public.items REPLICA IDENTITY FULL`)
	})
	f.exec(t, "ALTER TABLE items REPLICA IDENTITY FULL", "UPDATE items SET cat = 43 WHERE id = 1")
	f.waitEqual(t)
}

// TestSource_TruncateApplied: a TRUNCATE of the followed table (alone, then between changes
// of one transaction) empties its index: the rows before it leave, the rows written after it
// stay, Verify finds the index equal to the table. With both plugins.
func TestSource_TruncateApplied(t *testing.T) {
	for _, plugin := range plugins {
		t.Run(plugin, func(t *testing.T) {
			f := setup(t, 500, plugin)
			stop := f.run(t)
			defer stop()
			f.waitEqual(t)
			f.exec(t, "TRUNCATE items")
			f.waitEqual(t)
			f.exec(t, "INSERT INTO items (id, las, cat, bra, name) SELECT g, 1, 1, 1, 'again' FROM generate_series(1, 50) g")
			f.waitEqual(t)
			f.exec(t, "BEGIN; INSERT INTO items (id, las, cat, name) VALUES (900, 2, 2, 'gone'); TRUNCATE items; INSERT INTO items (id, las, cat, name) VALUES (901, 3, 3, 'kept'); COMMIT")
			f.waitEqual(t)
			if rep := f.verify(t); rep.Rows != 1 || !rep.Clean() {
				t.Fatalf("verify: %+v", rep)
			}
		})
	}
}
