package sqldb

import (
	"context"
	"regexp"
	"strings"

	"github.com/redstate/redstate"
)

// identPattern is what a configured table or column name may be: a letter or underscore, then
// up to 63 letters, digits or underscores. Nothing else is ever spliced into a statement.
var identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// ValidIdent reports whether name may be used as a configured table or column name
// (^[A-Za-z_][A-Za-z0-9_]{0,63}$).
func ValidIdent(name string) bool { return identPattern.MatchString(name) }

// Quote returns name, which must satisfy ValidIdent, as a quoted identifier of the dialect:
// "name" on every engine (MySQL connections run with ANSI_QUOTES). A quoted name is taken
// exactly as written on PostgreSQL (a table created without quotes as Blog is stored as blog),
// without regard to case on SQLite, and on MySQL as the server takes it: table names by case
// where lower_case_table_names is 0 (Linux's default), column names without regard to case.
// Rebind leaves quoted identifiers alone.
func (d Dialect) Quote(name string) string { return `"` + name + `"` }

// ColumnTypes checks that table exists with each of columns and returns each column's
// database type name (sql.ColumnType.DatabaseTypeName, upper case: "BIGINT", "DATETIME",
// "TIMESTAMP", "INT8", …), in the order of columns. It only reads: one SELECT * … WHERE 1 = 0,
// whose result columns are matched by name, exactly on PostgreSQL (as a quoted name is), else
// without regard to case. Errors: ENOTFOUND naming the missing table or column, EUNAVAILABLE.
func ColumnTypes(ctx context.Context, db *DB, table string, columns []string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT * FROM "+db.Dialect.Quote(table)+" WHERE 1 = 0")
	if err != nil {
		if err := Map(err, "probe "+table); redstate.IsCode(err, redstate.EUNAVAILABLE) {
			return nil, err
		}
		return nil, redstate.Wrap(redstate.ENOTFOUND, err, "table "+table+" does not exist or cannot be read")
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, Map(err, "probe "+table)
	}
	types := make([]string, len(columns))
	for i, c := range columns {
		found := false
		for _, ct := range cts {
			if ct.Name() == c || (db.Dialect != Postgres && strings.EqualFold(ct.Name(), c)) {
				types[i], found = strings.ToUpper(ct.DatabaseTypeName()), true
				break
			}
		}
		if !found {
			return nil, redstate.Errorf(redstate.ENOTFOUND, "table %s has no column %s", table, c)
		}
	}
	return types, Map(rows.Err(), "probe "+table)
}
