package sqldb_test

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestTimeColumn: a date-time column without zone is a wall clock in the given location (a
// value written by another application is read as such, whatever the server's time_zone);
// a column with zone — PostgreSQL's TIMESTAMPTZ, MySQL's TIMESTAMP — is an instant; values
// written with Arg read back with Dest to the microsecond and compare through Expr.
func TestTimeColumn(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		naive, zoned := "DATETIME", ""
		switch db.Dialect {
		case sqldb.Postgres:
			naive, zoned = "TIMESTAMP", "TIMESTAMPTZ"
		case sqldb.MySQL:
			naive, zoned = "DATETIME(6)", "TIMESTAMP(6) NULL"
		}
		cols := "k INT PRIMARY KEY, wall " + naive
		if zoned != "" {
			cols += ", at " + zoned
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE tc ("+cols+")"); err != nil {
			t.Fatal(err)
		}
		types, err := sqldb.ColumnTypes(ctx, db, "tc", []string{"wall"})
		if err != nil {
			t.Fatal(err)
		}
		wall, err := sqldb.TimeColumnOf(db.Dialect, types[0], shanghai)
		if err != nil {
			t.Fatal(err)
		}
		// Written by the team's application as Beijing wall clock.
		if _, err := db.ExecContext(ctx, "INSERT INTO tc (k, wall) VALUES (1, '2023-06-13 20:16:00.5')"); err != nil {
			t.Fatal(err)
		}
		var got time.Time
		if err := db.QueryRowContext(ctx, "SELECT "+wall.Expr("wall")+" FROM tc WHERE k = 1").Scan(wall.Dest(&got)); err != nil {
			t.Fatal(err)
		}
		if want := time.Date(2023, 6, 13, 12, 16, 0, 500e6, time.UTC); !got.Equal(want) {
			t.Fatalf("wall clock read as %v, want %v", got, want)
		}
		at := time.Date(2024, 2, 29, 23, 59, 58, 123456e3, time.UTC)
		if _, err := db.ExecContext(ctx, db.Rebind("INSERT INTO tc (k, wall) VALUES (2, ?)"), wall.Arg(at)); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, db.Rebind("SELECT COUNT(*) FROM tc WHERE "+wall.Expr("wall")+" >= ?"), wall.Arg(at)).Scan(&n); err != nil || n != 1 {
			t.Fatalf("rows at or after %v = %d, %v; want 1", at, n, err)
		}
		if err := db.QueryRowContext(ctx, "SELECT "+wall.Expr("wall")+" FROM tc WHERE k = 2").Scan(wall.Dest(&got)); err != nil || !got.Equal(at) {
			t.Fatalf("wall clock round trip = %v, %v; want %v", got, err, at)
		}
		if zoned == "" {
			return
		}
		types, err = sqldb.ColumnTypes(ctx, db, "tc", []string{"at"})
		if err != nil {
			t.Fatal(err)
		}
		instant, err := sqldb.TimeColumnOf(db.Dialect, types[0], shanghai)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, db.Rebind("UPDATE tc SET at = ? WHERE k = 2"), instant.Arg(at)); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "SELECT "+instant.Expr("at")+" FROM tc WHERE k = 2").Scan(instant.Dest(&got)); err != nil || !got.Equal(at) {
			t.Fatalf("instant round trip = %v, %v; want %v (the zone of the mapping must not apply)", got, err, at)
		}
		epoch := "EXTRACT(EPOCH FROM at)"
		if db.Dialect == sqldb.MySQL {
			epoch = "UNIX_TIMESTAMP(at)"
		}
		var secs float64
		if err := db.QueryRowContext(ctx, "SELECT "+epoch+" FROM tc WHERE k = 2").Scan(&secs); err != nil || int64(secs) != at.Unix() {
			t.Fatalf("stored instant = %v s, %v; want %d", secs, err, at.Unix())
		}
	})
}
