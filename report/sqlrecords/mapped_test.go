package sqlrecords_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/reporttest"
	"github.com/redstate/redstate/report/sqlrecords"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// createSeedRecords creates a records table as an existing report application keeps it (its own
// column names, a date-time without zone, columns redstate does not know about). On MySQL the
// date-time is DATETIME(6), as the RecordStore suite needs microseconds.
func createSeedRecords(t *testing.T, db *sqldb.DB, withoutError bool) {
	t.Helper()
	dt := "DATETIME"
	switch db.Dialect {
	case sqldb.Postgres:
		dt = "TIMESTAMP"
	case sqldb.MySQL:
		dt = "DATETIME(6)"
	}
	errCol := `"ErrorMessage" VARCHAR(500) NOT NULL DEFAULT '',`
	if withoutError {
		errCol = ""
	}
	stmt := `CREATE TABLE "AssessmentRecord" ("Id" BIGINT PRIMARY KEY, "UserId" BIGINT NOT NULL DEFAULT 0, "Status" INT NOT NULL,
		"AnswersJson" TEXT, "ResultJson" TEXT, ` + errCol + ` "IsDeleted" INT NOT NULL DEFAULT 0, "UpdateTime" ` + dt + ` NOT NULL)`
	if _, err := db.ExecContext(context.Background(), stmt); err != nil {
		t.Fatal(err)
	}
}

func seedRecords(owns bool) report.RecordsSQLConfig {
	return report.RecordsSQLConfig{OwnsTable: owns, TimeZone: "Asia/Shanghai", Records: report.RecordsTable{Table: "AssessmentRecord",
		ID: "Id", Status: "Status", Answers: "AnswersJson", Result: "ResultJson", Error: "ErrorMessage", Updated: "UpdateTime"}}
}

// TestSeedRecords_SuiteInPlace runs the RecordStore suite on the team's records table, not
// owned (no DDL), with a DATETIME in Asia/Shanghai.
func TestSeedRecords_SuiteInPlace(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		createSeedRecords(t, db, false)
		s := newStore(t, db, sqlrecords.Options{Table: seedRecords(false)})
		reporttest.RunRecordStoreSuite(t, func(*testing.T) report.RecordStore { return s })
	})
}

// TestSeedRecords_NoDDLOptionalColumnsAndMissingColumn: without an error column the reason is
// not stored; the team's other columns keep their values; a missing column is a clear error
// naming its key; retention works on a date-time column.
func TestSeedRecords_NoDDLOptionalColumnsAndMissingColumn(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		createSeedRecords(t, db, true)
		before := schemaObjects(t, db)
		if _, err := sqlrecords.New(ctx, db, sqlrecords.Options{Table: seedRecords(false)}); !redstate.IsCode(err, redstate.ENOTFOUND) ||
			!strings.Contains(err.Error(), "report.sql.records.error: table AssessmentRecord has no column ErrorMessage") {
			t.Fatalf("New without the error column = %v", err)
		}
		cfg := seedRecords(false)
		cfg.Records.Error = ""
		now := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
		s := newStore(t, db, sqlrecords.Options{Table: cfg, Retention: time.Hour, Now: func() time.Time { return now }})
		if _, err := db.ExecContext(ctx, `INSERT INTO "AssessmentRecord" ("Id", "UserId", "Status", "UpdateTime") VALUES (7, 42, 2, '2026-01-01 15:30:00')`); err != nil {
			t.Fatal(err)
		}
		r, err := s.Get(ctx, 7) // 15:30 in Shanghai is 07:30 UTC: within the hour
		if err != nil || r.Status != 2 || !r.UpdatedAt.Equal(now.Add(-30*time.Minute)) {
			t.Fatalf("Get = %+v, %v", r, err)
		}
		if _, err := s.Submit(ctx, 7, json.RawMessage(`{"q":1}`)); err != nil {
			t.Fatal(err)
		}
		if r, err := s.SetFailed(ctx, 7, "boom"); err != nil || r.Status != report.StatusFailed || r.Error != "" {
			t.Fatalf("SetFailed = %+v, %v", r, err)
		}
		var user int64
		if err := db.QueryRowContext(ctx, `SELECT "UserId" FROM "AssessmentRecord" WHERE "Id" = 7`).Scan(&user); err != nil || user != 42 {
			t.Fatalf("UserId = %d, %v; the team's column changed", user, err)
		}
		now = now.Add(2 * time.Hour)
		if _, err := s.Get(ctx, 7); !redstate.IsCode(err, redstate.ENOTFOUND) {
			t.Fatalf("expired Get = %v", err)
		}
		if got := schemaObjects(t, db); got != before {
			t.Fatalf("schema objects of the table = %d, were %d: DDL ran on a table redstate does not own", got, before)
		}
	})
}

// schemaObjects counts the records table's schema objects (table, indexes, triggers).
func schemaObjects(t *testing.T, db *sqldb.DB) int {
	t.Helper()
	q := `SELECT COUNT(*) FROM sqlite_master WHERE lower(tbl_name) = 'assessmentrecord'`
	switch db.Dialect {
	case sqldb.Postgres:
		q = `SELECT (SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'AssessmentRecord') +
			(SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'AssessmentRecord')`
	case sqldb.MySQL:
		q = `SELECT (SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'AssessmentRecord') +
			(SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'AssessmentRecord') +
			(SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema = DATABASE() AND event_object_table = 'AssessmentRecord')`
	}
	var n int
	if err := db.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMappedOwned_CreatesMissingTable: with a mapping and owns-table, redstate creates the
// records table when missing (updated time in Unix microseconds) and the RecordStore suite
// passes on it; a second New keeps it.
func TestMappedOwned_CreatesMissingTable(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		cfg := seedRecords(true)
		cfg.Records.Table = "records"
		s := newStore(t, db, sqlrecords.Options{Table: cfg})
		newStore(t, db, sqlrecords.Options{Table: cfg})
		if r, err := s.Create(context.Background(), 987654321, report.StatusPending, json.RawMessage(`{"q":"😀"}`)); err != nil || string(r.Answers) != `{"q":"😀"}` {
			t.Fatalf("Create = %+v, %v", r, err)
		}
		reporttest.RunRecordStoreSuite(t, func(*testing.T) report.RecordStore { return s })
	})
}
