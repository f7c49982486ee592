package mysqlsource_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

func TestMain(m *testing.M) { sqltest.Main(m) }

type fixture struct {
	db     *sqldb.DB
	dsn    string
	name   string // the MariaDB database, the index "db"
	client redis.UniversalClient
	redis  *redistest.Server
	log    syncBuffer
	ix     *index.Indexer
	prefix string // the index's key prefix
}

func itemsSpec(db string) index.TableSpec {
	return index.TableSpec{
		DB: db, Table: "items", Key: "id", DeleteColumn: "yn",
		Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "las", Type: index.TypeInt},
			{Name: "cat", Type: index.TypeInt}, {Name: "bra", Type: "int?"}, {Name: "name", Type: "string?"},
			{Name: "qty", Type: index.TypeLong}, {Name: "kind", Type: "string?"}, {Name: "at", Type: index.TypeDateTime},
			{Name: "note", Type: "string?"}},
		Dimensions: [][]index.Part{
			{{Code: "las", Column: "las"}, {Code: "cat", Column: "cat"}, {Code: "bra", Column: "bra"}},
			{{Code: "las", Column: "las"}, {Code: "cat", Column: "cat"}},
		},
	}
}

// setup creates items (rows rows) and an undeclared table on a fresh MariaDB database.
func setup(t *testing.T, rows int) *fixture {
	t.Helper()
	dsn := sqltest.MariaDBDSN(t)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	f := &fixture{db: db, dsn: dsn}
	if err := db.QueryRow("SELECT DATABASE()").Scan(&f.name); err != nil {
		t.Fatal(err)
	}
	f.exec(t,
		"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, bra int NULL, name varchar(100), "+
			"qty int unsigned NOT NULL DEFAULT 4294967295, kind enum('a','b','c') NULL, at timestamp(3) NOT NULL DEFAULT '2025-11-09 10:30:00.250', yn int NOT NULL DEFAULT 1)",
		"CREATE TABLE other (id bigint PRIMARY KEY, v int)")
	for i := 1; i <= rows; i += 100 {
		q := "INSERT INTO items (id, las, cat, bra, name, kind) VALUES "
		for j := i; j < i+100 && j <= rows; j++ {
			if j > i {
				q += ","
			}
			q += fmt.Sprintf("(%d, %d, %d, %d, 'item %d 😀', '%c')", j, j%7, j%5, j%3, j, 'a'+j%3)
		}
		f.exec(t, q)
	}
	f.redis = redistest.StartStandalone(t, redistest.WithAppendOnly(false))
	f.client = f.redis.Client(t)
	f.prefix = indextest.UniquePrefix()
	f.ix, err = index.New(redisindex.New(f.client), []index.TableSpec{itemsSpec(f.name)}, index.Options{Prefix: f.prefix})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) exec(t *testing.T, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := f.db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// source returns a Source of items logging into f.log, its options changed by mods.
func (f *fixture) source(t *testing.T, mods ...func(*mysqlsource.Options)) *mysqlsource.Source {
	t.Helper()
	opts := mysqlsource.Options{URL: f.dsn, DB: f.db, Redis: f.client, Tables: []string{f.name + ".items"},
		BatchRows: 50, SnapshotPage: 100, ErrorDelay: 50 * time.Millisecond, MaxErrorDelay: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&f.log, nil))}
	for _, m := range mods {
		m(&opts)
	}
	src, err := mysqlsource.New(f.ix, opts)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// run starts src; the returned function stops it and returns Run's error (again on later
// calls).
func run(src *mysqlsource.Source) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
}

// writes changes the table: moves between index keys, deletes, logical deletes, inserts, an
// undeclared table's rows, and one transaction of many rows.
func (f *fixture) writes(t *testing.T, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		f.exec(t,
			fmt.Sprintf("UPDATE items SET cat = cat + 10, name = 'moved %d', kind = 'c' WHERE id = %d", i, i*3),
			fmt.Sprintf("DELETE FROM items WHERE id = %d", i*3+1),
			fmt.Sprintf("UPDATE items SET yn = 0 WHERE id = %d", i*3+2),
			fmt.Sprintf("INSERT INTO items (id, las, cat, bra, name, qty) VALUES (%d, 1, 2, NULL, 'new', 7) ON DUPLICATE KEY UPDATE las = 2", 100000+i),
			fmt.Sprintf("INSERT INTO other (id, v) VALUES (%d, 1) ON DUPLICATE KEY UPDATE v = v + 1", i))
	}
	f.exec(t, fmt.Sprintf("UPDATE items SET las = las + 1 WHERE id BETWEEN %d AND %d", from*3, from*3+300))
}

// caughtUp waits until src has recorded the server's current position.
func (f *fixture) caughtUp(t *testing.T, src *mysqlsource.Source) {
	t.Helper()
	var file string
	var pos uint32
	var rest [4]any
	if err := f.db.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &rest[0], &rest[1]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p := src.Position()
		if p.File > file || (p.File == file && p.Pos >= pos) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("source at %v, server at %s:%d", p, file, pos)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// verify checks the index equals the table.
func (f *fixture) verify(t *testing.T) index.VerifyReport {
	t.Helper()
	rep, err := f.ix.Verify(context.Background(), f.name, "items", mysqlsource.TableRows(context.Background(), f.db, f.name, "items"), index.EncodingText, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Fatalf("index differs from the table: %+v", rep)
	}
	return rep
}

// TestSource_SnapshotThenStream: existing rows are snapshotted, then live inserts, updates,
// deletes, logical deletes, a column added by DDL and a many-row transaction are streamed; the
// index ends equal to the table, and changes of an undeclared table are skipped.
func TestSource_SnapshotThenStream(t *testing.T) {
	f := setup(t, 1000)
	src := f.source(t)
	stop := run(src)
	defer stop()
	f.writes(t, 1, 30)
	f.exec(t, "ALTER TABLE items ADD COLUMN note varchar(20) NULL",
		"UPDATE items SET note = 'noted' WHERE id < 20",
		"INSERT INTO items (id, las, cat, name, note) VALUES (200000, 3, 3, 'after ddl', 'n')")
	f.writes(t, 31, 10)
	f.caughtUp(t, src)
	rep := f.verify(t)
	// The snapshot starts while the writes begin: it sees the table at its position.
	if n := src.SnapshotRows.Load(); n < 990 || n > 1000 {
		t.Errorf("snapshot rows = %d, want about 1000", n)
	}
	if src.Events.Load() == 0 || f.ix.Skipped() == 0 {
		t.Errorf("events = %d, skipped = %d: want both > 0", src.Events.Load(), f.ix.Skipped())
	}
	rows, err := f.ix.Query(context.Background(), f.name, "items", map[string]string{"las": "3", "cat": "3"})
	if err != nil || string(rows["200000"]) == "" {
		t.Fatalf("row inserted after the DDL: %v %v", rows, err)
	}
	t.Logf("verify: %+v; row 200000: %s", rep, rows["200000"])
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestSource_RestartResumes: a new instance resumes from the recorded position with no new
// snapshot, also after writes made while no source ran.
func TestSource_RestartResumes(t *testing.T) {
	f := setup(t, 300)
	src := f.source(t)
	stop := run(src)
	f.writes(t, 1, 10)
	f.caughtUp(t, src)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	f.writes(t, 11, 10)
	for round := 0; round < 3; round++ {
		src = f.source(t)
		stop = run(src)
		f.writes(t, 21+round*10, 10)
		f.caughtUp(t, src)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n := src.SnapshotRows.Load(); n != 0 {
			t.Fatalf("restart %d snapshotted %d rows again", round, n)
		}
		if src.Events.Load() == 0 {
			t.Fatalf("restart %d applied nothing", round)
		}
	}
	f.verify(t)
}

// TestSource_PurgedPosition: a recorded position the server purged is an error (ErrPurged)
// naming index resnapshot; Resnapshot while the source runs makes it snapshot again.
func TestSource_PurgedPosition(t *testing.T) {
	f := setup(t, 10)
	src := f.source(t)
	stop := run(src)
	f.writes(t, 1, 2)
	f.caughtUp(t, src)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// A replica's dump thread may still hold the old log for a moment after it disconnected:
	// the server then keeps it, so purge until the oldest log is the current one.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var file, oldest string
		var pos uint32
		var rest [2]any
		f.exec(t, "FLUSH BINARY LOGS")
		if err := f.db.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &rest[0], &rest[1]); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "PURGE BINARY LOGS TO '"+file+"'")
		if err := f.db.QueryRow("SHOW BINARY LOGS").Scan(&oldest, &rest[0]); err != nil {
			t.Fatal(err)
		}
		if oldest == file {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server keeps %s", oldest)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The source keeps running, failing with the error until the position is deleted.
	src = f.source(t)
	stop = run(src)
	defer stop()
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(f.log.String(), "redstate index resnapshot --source mysql --yes") {
		if time.Now().After(deadline) {
			t.Fatalf("no purged-position error naming index resnapshot:\n%s", f.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(f.log.String(), mysqlsource.ErrPurged.Error()) {
		t.Fatalf("the error is not ErrPurged's:\n%s", f.log.String())
	}
	// The command the error names takes a new snapshot, with no restart.
	r, err := mysqlsource.Resnapshot(context.Background(), f.client, src.Keys())
	if err != nil || r.Position == "" || r.LeaseHolder == "" {
		t.Fatalf("Resnapshot = %+v, %v: want the purged position and the lease deleted", r, err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for src.SnapshotRows.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no new snapshot after index resnapshot")
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.writes(t, 3, 2)
	f.caughtUp(t, src)
	// Rows deleted between the purged position and the new snapshot are in no stream: the
	// repair the error names removes them.
	if _, err := f.ix.Verify(context.Background(), f.name, "items", mysqlsource.TableRows(context.Background(), f.db, f.name, "items"), index.EncodingText, true, nil); err != nil {
		t.Fatal(err)
	}
	f.verify(t)
}

// TestSource_RedisOutagePauses: while Redis is down the recorded position does not move; when
// it is back the source resumes from it and the index ends equal to the table.
func TestSource_RedisOutagePauses(t *testing.T) {
	f := setup(t, 200)
	src := f.source(t)
	stop := run(src)
	defer stop()
	f.writes(t, 1, 5)
	f.caughtUp(t, src)
	before := src.Position()
	f.redis.Stop(t)
	f.writes(t, 6, 10)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(f.log.String(), "retrying") {
		if time.Now().After(deadline) {
			t.Fatal("the source did not notice Redis was down")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p := src.Position(); p != before {
		t.Fatalf("position moved from %v to %v while Redis was down", before, p)
	}
	f.redis.Restart(t)
	f.caughtUp(t, src)
	f.verify(t)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestSource_TruncateAndFloat: a FLOAT column is stored with the float's own digits from the
// snapshot and from the binary log (0.1, 5.17), and TRUNCATE TABLE empties the table's index:
// the rows before it leave, those written after it stay, Verify finds the index equal to the
// table.
func TestSource_TruncateAndFloat(t *testing.T) {
	f := setup(t, 300)
	f.exec(t, "ALTER TABLE items ADD COLUMN w FLOAT NULL", "UPDATE items SET w = 0.1")
	spec := itemsSpec(f.name)
	spec.Columns = append(spec.Columns, index.Column{Name: "w", Type: "float?"})
	ix, err := index.New(redisindex.New(f.client), []index.TableSpec{spec}, index.Options{Prefix: f.prefix})
	if err != nil {
		t.Fatal(err)
	}
	f.ix = ix
	src := f.source(t)
	stop := run(src)
	defer stop()
	f.exec(t, "UPDATE items SET w = 5.17 WHERE id = 7")
	f.caughtUp(t, src)
	rows, err := f.ix.Query(context.Background(), f.name, "items", map[string]string{"las": "0", "cat": "2"}) // id 7: las 0, cat 2
	if err != nil || !strings.Contains(string(rows["7"]), `"w":5.17`) || !strings.Contains(string(rows["42"]), `"w":0.1`) {
		t.Fatalf("rows 7 and 42: %s %s %v", rows["7"], rows["42"], err)
	}
	f.exec(t, "TRUNCATE TABLE items", "INSERT INTO items (id, las, cat, name, w) VALUES (1, 1, 1, 'after', 5.17)")
	f.caughtUp(t, src)
	if rep := f.verify(t); rep.Rows != 1 {
		t.Fatalf("verify: %+v", rep)
	}
}
