package mysqlsource_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// fullMetadata makes the server log column names in its table maps until the test ends
// (binlog_row_metadata is global and forgotten at a restart).
func (f *fixture) fullMetadata(t *testing.T) {
	t.Helper()
	f.exec(t, "SET GLOBAL binlog_row_metadata = 'FULL'")
	t.Cleanup(func() { _, _ = f.db.Exec("SET GLOBAL binlog_row_metadata = DEFAULT") })
}

// retries counts the source's failed attempts logged so far.
func (f *fixture) retries() int { return strings.Count(f.log.String(), "retrying") }

// TestSource_MariaDBRestart: MariaDB is killed (SIGKILL) or shut down while changes stream;
// the source reconnects with back-off from its recorded position, and the index ends equal to
// the table: nothing lost, no replay that changes a result.
func TestSource_MariaDBRestart(t *testing.T) {
	for _, crash := range []bool{true, false} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			f := setup(t, 2000)
			src := f.source(t)
			stop := run(src)
			defer stop()
			f.writes(t, 1, 10)
			f.caughtUp(t, src)
			// A change of every row, then at once the restart: the source is mid-stream.
			f.exec(t, "UPDATE items SET cat = cat + 1, name = CONCAT(name, '+')")
			before := f.retries()
			sqltest.MariaDBTestServer(t).Restart(t, crash)
			f.fullMetadata(t)
			await(t, time.Minute, "the source to notice the restart", func() bool { return f.retries() > before })
			f.writes(t, 11, 10)
			f.caughtUp(t, src)
			f.verify(t)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSource_BinlogDumpKilled: the replication connection is killed on the server (as a
// network loss would end it) several times mid-stream; the source reconnects and misses
// nothing.
func TestSource_BinlogDumpKilled(t *testing.T) {
	f := setup(t, 1000)
	src := f.source(t)
	stop := run(src)
	defer stop()
	f.writes(t, 1, 5)
	f.caughtUp(t, src)
	for round := 0; round < 3; round++ {
		f.exec(t, "UPDATE items SET qty = qty - 1")
		before := f.retries()
		var killed int
		await(t, time.Minute, "a Binlog Dump connection to kill", func() bool {
			rows, err := f.db.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				if _, err := f.db.Exec(fmt.Sprintf("KILL CONNECTION %d", id)); err == nil {
					killed++
				}
			}
			return killed > 0
		})
		f.writes(t, 10+round*10, 10)
		await(t, time.Minute, "the source to reconnect", func() bool { return f.retries() > before })
		f.caughtUp(t, src)
		f.verify(t)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestSource_DDLMidStream: columns added at the end and in the middle and an indexed column
// renamed while changes stream (binlog_row_metadata=FULL): images are mapped by their own
// column names, so an image older than the DDL keeps its values in their columns.
//   - Renamed while the source was stopped, and restarted with index.tables naming the new
//     column (the stored field unchanged): the images older than the rename carry the old name
//     and are mapped to the new one.
//   - Renamed while the source runs with index.tables naming the old column: it stops at the
//     first image without it, with an error naming it, and resumes there once restarted with
//     the new name.
//
// Each time the index ends equal to the table.
func TestSource_DDLMidStream(t *testing.T) {
	f := setup(t, 1000)
	f.fullMetadata(t)
	src := f.source(t)
	stop := run(src)
	defer func() { _ = stop() }()
	f.writes(t, 1, 5)
	f.exec(t, "ALTER TABLE items ADD COLUMN note varchar(20) NULL",
		"UPDATE items SET note = 'end', las = las + 1 WHERE id % 4 = 0",
		"ALTER TABLE items ADD COLUMN extra int NOT NULL DEFAULT 5 AFTER las",
		"UPDATE items SET extra = 6, cat = cat + 2 WHERE id % 4 = 1",
		"INSERT INTO items (id, las, extra, cat, name) VALUES (300000, 2, 7, 3, 'after the middle column')")
	f.writes(t, 6, 5)
	f.caughtUp(t, src)
	f.verify(t)
	restart := func(column string) {
		t.Helper()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		f.ix = f.renamedIndex(t, column)
		src = f.source(t)
		stop = run(src)
	}

	// Stopped, renamed, restarted with the new name.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	f.exec(t, "UPDATE items SET cat = cat + 1 WHERE id % 5 = 0",
		"INSERT INTO items (id, las, cat, name) VALUES (300001, 1, 9, 'before the rename')",
		"ALTER TABLE items RENAME COLUMN cat TO category",
		"UPDATE items SET category = category + 3, las = las + 1 WHERE id % 5 = 1",
		"DELETE FROM items WHERE id % 5 = 2",
		"UPDATE items SET yn = 0 WHERE id % 5 = 3")
	restart("category")
	f.caughtUp(t, src)
	f.verify(t)

	// Renamed while streaming under the old name: the source stops before the first image
	// without it.
	f.exec(t, "UPDATE items SET category = category + 1 WHERE id % 7 = 0",
		"ALTER TABLE items CHANGE COLUMN category cat2 int NOT NULL",
		"UPDATE items SET cat2 = cat2 + 1, name = 'after the second rename' WHERE id % 7 = 1")
	await(t, time.Minute, "the source to stop at the renamed column", func() bool {
		return strings.Contains(f.log.String(), "have no column category, declared in index.tables")
	})
	restart("cat2")
	f.exec(t, "INSERT INTO items (id, las, cat2, name) VALUES (300002, 1, 2, 'no')")
	f.caughtUp(t, src)
	if src.SnapshotRows.Load() != 0 {
		t.Fatal("a restart snapshotted again")
	}
	f.verify(t)
}

// renamedIndex is the fixture's index (same keys) with the column "cat" read from column.
func (f *fixture) renamedIndex(t *testing.T, column string) *index.Indexer {
	t.Helper()
	spec := itemsSpec(f.name)
	for i, c := range spec.Columns {
		if c.Name == "cat" {
			spec.Columns[i] = index.Column{Name: column, Type: c.Type, Field: "cat"}
		}
	}
	for _, d := range spec.Dimensions {
		for i := range d {
			if d[i].Column == "cat" {
				d[i].Column = column
			}
		}
	}
	ix, err := index.New(redisindex.New(f.client), []index.TableSpec{spec}, index.Options{Prefix: f.prefix})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestSource_LargeTransaction: one transaction of 50,000 rows is applied in batches, the
// recorded position staying before it until its end; a source stopped in its middle leaves the
// position there, and the next one reads the whole transaction again (the applied part is
// stale by version) and ends with the index equal to the table.
func TestSource_LargeTransaction(t *testing.T) {
	const rows = 50000
	f := setup(t, 100)
	src := f.batchSource(t, 500)
	stop := run(src)
	defer func() { _ = stop() }()
	f.writes(t, 1, 3)
	f.caughtUp(t, src)
	before, events := src.Position(), src.Events.Load()
	f.exec(t, fmt.Sprintf("INSERT INTO items (id, las, cat, bra, name) SELECT 1000000 + seq, seq %% 7, seq %% 5, seq %% 3, CONCAT('bulk ', seq) FROM seq_1_to_%d", rows))
	await(t, time.Minute, "part of the transaction to be applied", func() bool {
		if p := src.Position(); p != before {
			t.Fatalf("position moved to %v inside the transaction (from %v, %d of %d rows applied)", p, before, src.Events.Load()-events, rows)
		}
		return src.Events.Load()-events >= 2000
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	applied := src.Events.Load() - events
	if applied >= rows {
		t.Fatalf("the whole transaction was applied before the stop (%d rows): cannot test a stop in its middle", applied)
	}
	recorded, err := f.client.Get(context.Background(), src.Keys().Position).Result()
	if err != nil || recorded != before.String() {
		t.Fatalf("recorded position %q (%v) after a stop inside the transaction, want %v", recorded, err, before)
	}
	stale := f.ix.Stats(f.name, "items").Stale.Load()
	src = f.batchSource(t, 500)
	stop = run(src)
	f.exec(t, "UPDATE items SET cat = cat + 1 WHERE id > 1000000 AND id % 3 = 0")
	f.caughtUp(t, src)
	if n := src.Events.Load(); n < rows {
		t.Fatalf("the restarted source applied %d events, want the whole transaction again (%d)", n, rows)
	}
	if s := f.ix.Stats(f.name, "items").Stale.Load() - stale; s < applied {
		t.Errorf("%d changes stale on the replay, want at least the %d applied before the stop", s, applied)
	}
	f.verify(t)
	t.Logf("stopped after %d of %d rows; the replay found %d stale", applied, rows, f.ix.Stats(f.name, "items").Stale.Load()-stale)
}

// batchSource is f.source applying up to rows changes at once.
func (f *fixture) batchSource(t *testing.T, rows int) *mysqlsource.Source {
	t.Helper()
	src, err := mysqlsource.New(f.ix, mysqlsource.Options{URL: f.dsn, DB: f.db, Redis: f.client, Tables: []string{f.name + ".items"},
		BatchRows: rows, ErrorDelay: 50 * time.Millisecond, MaxErrorDelay: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&f.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestSource_UndeclaredSkipped: row changes of a table not followed are counted as skipped and
// never applied.
func TestSource_UndeclaredSkipped(t *testing.T) {
	f := setup(t, 10)
	src := f.source(t)
	stop := run(src)
	defer func() { _ = stop() }()
	f.caughtUp(t, src)
	skipped, events := f.ix.Skipped(), src.Events.Load()
	f.exec(t, "INSERT INTO other (id, v) SELECT seq, 1 FROM seq_1_to_5000",
		"UPDATE other SET v = 2 WHERE id <= 1000",
		"DELETE FROM other WHERE id <= 500")
	f.caughtUp(t, src)
	if got := f.ix.Skipped() - skipped; got != 6500 {
		t.Errorf("skipped %d row changes of the undeclared table, want 6500", got)
	}
	if n := src.Events.Load() - events; n != 0 {
		t.Errorf("%d events applied from the undeclared table", n)
	}
	f.verify(t)
}

// TestSource_Progress: the figures of the metrics and the dashboard: the snapshot's estimate
// and percentage, events per second while changes stream, no lag (bytes, seconds) nor
// pending events once caught up.
func TestSource_Progress(t *testing.T) {
	f := setup(t, 3000)
	f.exec(t, "ANALYZE TABLE items")
	src := f.source(t)
	if src.SnapshotPercent() != 0 || src.Streaming() {
		t.Fatalf("before Run: %v%% streaming=%v", src.SnapshotPercent(), src.Streaming())
	}
	stop := run(src)
	defer func() { _ = stop() }()
	await(t, time.Minute, "the stream to start", src.Streaming)
	if est := src.SnapshotEstimate(); est < 1500 || est > 6000 {
		t.Errorf("snapshot estimate %d, want about 3000", est)
	}
	if p := src.SnapshotPercent(); p != 100 {
		t.Errorf("snapshot %v%% once streaming, want 100", p)
	}
	rate := 0.0
	for i := 1; rate == 0; i += 10 {
		f.writes(t, i, 10)
		rate = src.EventsPerSecond()
		if i > 10000 {
			t.Fatal("no events per second measured")
		}
	}
	f.caughtUp(t, src)
	await(t, time.Minute, "no lag in bytes or seconds nor pending events", func() bool {
		return src.LagBytes() == 0 && src.PendingEvents() == 0 && src.LagSeconds() == 0
	})
	t.Logf("events/s %.0f, events %d", rate, src.Events.Load())
}
