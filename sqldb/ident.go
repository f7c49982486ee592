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
// "name" on SQLite and PostgreSQL. A quoted name is taken exactly as written on PostgreSQL (a
// table created without quotes as Blog is stored as blog) and without regard to case on
// SQLite. Rebind leaves quoted identifiers alone.
func (d Dialect) Quote(name string) string { return `"` + name + `"` }

// ColumnTypes checks that table exists with each of columns and returns each column's
// database type name (sql.ColumnType.DatabaseTypeName, upper case: "BIGINT", "DATETIME",
// "TIMESTAMP", "INT8", …), in the order of columns. It only reads (SELECT … WHERE 1 = 0).
// Errors: ENOTFOUND naming the missing table or column, EUNAVAILABLE.
func ColumnTypes(ctx context.Context, db *DB, table string, columns []string) ([]string, error) {
	q := db.Dialect.Quote
	if err := probe(ctx, db, "SELECT * FROM "+q(table)+" WHERE 1 = 0", nil); err != nil {
		if redstate.IsCode(err, redstate.EUNAVAILABLE) {
			return nil, err
		}
		return nil, redstate.Wrap(redstate.ENOTFOUND, err, "table "+table+" does not exist or cannot be read")
	}
	types := make([]string, len(columns))
	for i, c := range columns {
		if err := probe(ctx, db, "SELECT "+q(c)+" FROM "+q(table)+" WHERE 1 = 0", &types[i]); err != nil {
			if redstate.IsCode(err, redstate.EUNAVAILABLE) {
				return nil, err
			}
			return nil, redstate.Wrap(redstate.ENOTFOUND, err, "table "+table+" has no column "+c)
		}
	}
	return types, nil
}

// probe runs query, which returns no row, and stores its first column's type name in typ.
func probe(ctx context.Context, db *DB, query string, typ *string) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return Map(err, "probe")
	}
	defer rows.Close()
	if typ != nil {
		cts, err := rows.ColumnTypes()
		if err != nil {
			return Map(err, "probe")
		}
		*typ = strings.ToUpper(cts[0].DatabaseTypeName())
	}
	return Map(rows.Err(), "probe")
}
