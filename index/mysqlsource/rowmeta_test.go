package mysqlsource_test

import (
	"context"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/mysqlsource"
)

// TestSource_RowMetadataMapsOldImages: a row image logged before a DDL that drops a column in
// the middle of the table, and read after it (the source was stopped meanwhile), is mapped by
// the column names the log carries with binlog_row_metadata=FULL, so the index ends equal to
// the table; without them (NO_LOG, MariaDB's default) it is mapped by the current columns'
// positions and its values land in the wrong columns.
func TestSource_RowMetadataMapsOldImages(t *testing.T) {
	for _, tc := range []struct {
		metadata string
		clean    bool
	}{{"FULL", true}, {"NO_LOG", false}} {
		t.Run(tc.metadata, func(t *testing.T) {
			f := setup(t, 20)
			f.exec(t, "ALTER TABLE items ADD COLUMN pad int NULL AFTER cat", "SET GLOBAL binlog_row_metadata = "+tc.metadata)
			defer f.exec(t, "SET GLOBAL binlog_row_metadata = DEFAULT")
			src := f.source(t)
			stop := run(src)
			f.caughtUp(t, src)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			f.exec(t, "UPDATE items SET cat = 4, bra = 2 WHERE id = 5", "ALTER TABLE items DROP COLUMN pad")
			src = f.source(t)
			stop = run(src)
			f.caughtUp(t, src)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rep, err := f.ix.Verify(ctx, f.name, "items", mysqlsource.TableRows(ctx, f.db, f.name, "items"), index.EncodingText, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Clean() != tc.clean {
				t.Fatalf("binlog_row_metadata=%s: index equal to the table = %v, want %v: %+v", tc.metadata, rep.Clean(), tc.clean, rep)
			}
		})
	}
}
