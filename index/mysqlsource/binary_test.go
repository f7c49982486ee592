package mysqlsource_test

import (
	"context"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestSource_BinaryColumns: a BINARY(4) key 00 FF 80 00 and a VARBINARY 00 FF 80 (bytes that are
// not UTF-8), read by the snapshot (SELECT) and by the binary log (which drops the BINARY's
// trailing zero byte: the source puts it back, so the key is declared plain bytes here), end as
// the row every other source gives (indextest.CheckBinaryRow: standard base64, one key, one id),
// and verify finds the index equal to the table.
func TestSource_BinaryColumns(t *testing.T) {
	for _, path := range []string{"snapshot", "binlog"} {
		t.Run(path, func(t *testing.T) {
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
			insert := "INSERT INTO blobs (uid, code, note) VALUES (X'00FF8000', X'00FF80', 'x')"
			f.exec(t, "CREATE TABLE blobs (uid BINARY(4) PRIMARY KEY, code VARBINARY(8), note varchar(8) NOT NULL)")
			if path == "snapshot" {
				f.exec(t, insert)
			}
			f.client = redistest.StartStandalone(t, redistest.WithAppendOnly(false)).Client(t)
			spec := indextest.BinaryTable(f.name)
			spec.Columns[0].Type = index.TypeBytes // no width: the source itself gives a BINARY its bytes
			f.ix, err = index.New(redisindex.New(f.client), []index.TableSpec{spec}, index.Options{Prefix: indextest.UniquePrefix()})
			if err != nil {
				t.Fatal(err)
			}
			src := f.source(t, func(o *mysqlsource.Options) { o.Tables = []string{f.name + ".blobs"} })
			stop := run(src)
			defer stop()
			if path == "binlog" {
				f.caughtUp(t, src) // the (empty) snapshot is done: the row comes from the log
				f.exec(t, insert)
			}
			f.caughtUp(t, src)
			if path == "binlog" && src.Events.Load() != 1 {
				t.Fatalf("binlog events = %d, want 1", src.Events.Load())
			}
			indextest.CheckBinaryRow(t, f.ix, f.name)
			rep, err := f.ix.Verify(context.Background(), f.name, "blobs", mysqlsource.TableRows(context.Background(), f.db, f.name, "blobs"), index.EncodingText, false, nil)
			if err != nil || !rep.Clean() {
				t.Fatalf("verify: %+v %v", rep, err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
