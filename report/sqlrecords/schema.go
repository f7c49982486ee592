package sqlrecords

import (
	"strings"

	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/sqldb"
)

// Component is the name the record schema's migrations are recorded under.
const Component = "report-records"

// Table is the records table: the legacy application's assessment_records as far as its report is
// concerned.
const Table = "assessment_records"

// Migrations are the record schema's migrations (sqldb.Migrate). Times are Unix microseconds
// (UTC), the same on every engine; answers and result are JSON text kept byte for byte.
var Migrations = []sqldb.Migration{
	{Version: 1, Name: "create assessment_records", Up: func(d sqldb.Dialect) []string {
		if d == sqldb.MySQL {
			return mysqlV1
		}
		return []string{
			`CREATE TABLE ` + Table + ` (
				id BIGINT PRIMARY KEY,
				status SMALLINT NOT NULL CHECK (status BETWEEN 1 AND 5),
				answers TEXT,
				result TEXT,
				error TEXT NOT NULL DEFAULT '',
				updated_at BIGINT NOT NULL)`,
			// The reconciler's candidates: records in status 3 by last write.
			`CREATE INDEX ` + Table + `_generating ON ` + Table + ` (updated_at) WHERE status = 3`,
			// Retention sweeps.
			`CREATE INDEX ` + Table + `_updated ON ` + Table + ` (updated_at)`,
		}
	}},
}

// ownedTable is the statement that creates a mapped records table redstate owns
// (report.sql.owns-table) when it is missing: the default schema under the mapped names
// (updated time in Unix microseconds), without the columns left unmapped; on MySQL as
// mysqlV1 (LONGTEXT, the index inside CREATE TABLE, utf8mb4 with binary comparison).
func ownedTable(d sqldb.Dialect, cfg report.RecordsSQLConfig) []string {
	q, r := d.Quote, cfg.Records
	text, errText := "TEXT", "TEXT NOT NULL DEFAULT ''"
	if d == sqldb.MySQL {
		text, errText = "LONGTEXT", "LONGTEXT NOT NULL"
	}
	cols := []string{q(r.ID) + " BIGINT NOT NULL PRIMARY KEY", q(r.Status) + " SMALLINT NOT NULL CHECK (" + q(r.Status) + " BETWEEN 1 AND 5)"}
	if r.Answers != "" {
		cols = append(cols, q(r.Answers)+" "+text)
	}
	if r.Result != "" {
		cols = append(cols, q(r.Result)+" "+text)
	}
	if r.Error != "" {
		cols = append(cols, q(r.Error)+" "+errText)
	}
	cols = append(cols, q(r.Updated)+" BIGINT NOT NULL")
	if d == sqldb.MySQL {
		cols = append(cols, "INDEX "+q(r.Table+"_updated")+" ("+q(r.Updated)+")")
		return []string{"CREATE TABLE IF NOT EXISTS " + q(r.Table) + " (" + strings.Join(cols, ", ") + ")" + mysqlTable}
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS " + q(r.Table) + " (" + strings.Join(cols, ", ") + ")",
		"CREATE INDEX IF NOT EXISTS " + q(r.Table+"_updated") + " ON " + q(r.Table) + " (" + q(r.Updated) + ")",
	}
}

// mysqlV1 is migration 1 on MySQL: one CREATE TABLE IF NOT EXISTS with its indexes (MySQL
// commits DDL implicitly, so an interrupted migration is simply run again), LONGTEXT for the
// JSON (TEXT stops at 64 KiB), no default on a text column (MySQL 8 allows none), and an index
// on (status, updated_at) where MySQL has no partial index. utf8mb4 with binary comparison.
var mysqlV1 = []string{
	`CREATE TABLE IF NOT EXISTS ` + Table + ` (
		id BIGINT NOT NULL PRIMARY KEY,
		status SMALLINT NOT NULL CHECK (status BETWEEN 1 AND 5),
		answers LONGTEXT,
		result LONGTEXT,
		error LONGTEXT NOT NULL,
		updated_at BIGINT NOT NULL,
		INDEX ` + Table + `_generating (status, updated_at),
		INDEX ` + Table + `_updated (updated_at)
	)` + mysqlTable,
}

// mysqlTable ends every MySQL CREATE TABLE: InnoDB, utf8mb4, binary comparison of strings.
const mysqlTable = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
