package sqlrecords

import (
	"strings"

	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/sqldb"
)

// Component is the name the record schema's migrations are recorded under.
const Component = "report-records"

// Table is the records table: the seed's assessment_records as far as its report is concerned.
const Table = "assessment_records"

// Migrations are the record schema's migrations (sqldb.Migrate). Times are Unix microseconds
// (UTC), the same on both engines; answers and result are JSON text kept byte for byte.
var Migrations = []sqldb.Migration{
	{Version: 1, Name: "create assessment_records", Up: func(sqldb.Dialect) []string {
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
// (updated time in Unix microseconds), without the columns left unmapped.
func ownedTable(d sqldb.Dialect, cfg report.RecordsSQLConfig) []string {
	q, r := d.Quote, cfg.Records
	cols := []string{q(r.ID) + " BIGINT PRIMARY KEY", q(r.Status) + " SMALLINT NOT NULL CHECK (" + q(r.Status) + " BETWEEN 1 AND 5)"}
	if r.Answers != "" {
		cols = append(cols, q(r.Answers)+" TEXT")
	}
	if r.Result != "" {
		cols = append(cols, q(r.Result)+" TEXT")
	}
	if r.Error != "" {
		cols = append(cols, q(r.Error)+" TEXT NOT NULL DEFAULT ''")
	}
	cols = append(cols, q(r.Updated)+" BIGINT NOT NULL")
	return []string{
		"CREATE TABLE IF NOT EXISTS " + q(r.Table) + " (" + strings.Join(cols, ", ") + ")",
		"CREATE INDEX IF NOT EXISTS " + q(r.Table+"_updated") + " ON " + q(r.Table) + " (" + q(r.Updated) + ")",
	}
}
