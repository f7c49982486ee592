package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

func TestRedactDSN_MySQL(t *testing.T) {
	for in, want := range map[string]string{
		"mysql://app:s3cret@db:3306/redstate?tls=true": "mysql://app:***@db:3306/redstate?tls=true",
		"mariadb://app:s3cret@db/redstate":             "mariadb://app:***@db/redstate",
	} {
		if got := sqldb.RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
	ctx := context.Background()
	for _, dsn := range []string{"mysql://app:pw@db:3306/", "mysql://app:pw@/x", "mysql://app:pw@db/x?timeout=soon"} {
		if _, err := sqldb.Open(ctx, dsn); !redstate.IsCode(err, redstate.EINVALID) || strings.Contains(err.Error(), ":pw@") {
			t.Errorf("Open(%q) = %v, want EINVALID without the password", dsn, err)
		}
	}
	_, err := sqldb.Open(ctx, "mysql://app:pw-not-shown@127.0.0.1:1/x?timeout=2s")
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) || strings.Contains(err.Error(), "pw-not-shown") {
		t.Errorf("Open(unreachable mysql) = %v, want EUNAVAILABLE without the password", err)
	}
}

// TestMap_MySQLErrors: each MySQL error number Map knows, as the server sends it.
func TestMap_MySQLErrors(t *testing.T) {
	for _, c := range []struct {
		err  *mysql.MySQLError
		code string
		msg  string
	}{
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry '1' for key 'PRIMARY'"}, redstate.ECONFLICT, "already exists"},
		{&mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, redstate.EUNAVAILABLE, "unavailable"},
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}, redstate.EUNAVAILABLE, "unavailable"},
		{&mysql.MySQLError{Number: 2013, Message: "Lost connection to server during query"}, redstate.EUNAVAILABLE, "unavailable"},
		{&mysql.MySQLError{Number: 1290, Message: "The MariaDB server is running with the --read-only option so it cannot execute this statement"}, redstate.EUNAVAILABLE, "read-only"},
		{&mysql.MySQLError{Number: 1792, Message: "Cannot execute statement in a READ ONLY transaction"}, redstate.EUNAVAILABLE, "read-only"},
		{&mysql.MySQLError{Number: 1290, Message: "The MySQL server is running with the --secure-file-priv option"}, redstate.EINTERNAL, "unexpected"},
		{&mysql.MySQLError{Number: 1146, Message: "Table 'x.nowhere' doesn't exist"}, redstate.EINTERNAL, "unexpected"},
	} {
		err := sqldb.Map(c.err, "op")
		if !redstate.IsCode(err, c.code) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Map(%d %s) = %v, want %s mentioning %q", c.err.Number, c.err.Message, err, c.code, c.msg)
		}
	}
	if err := sqldb.Map(mysql.ErrInvalidConn, "op"); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Errorf("Map(invalid connection) = %v, want EUNAVAILABLE", err)
	}
}

// TestMySQL_ServerErrors provokes on the real server what Map must recognise: a lock wait
// timeout, a deadlock, a write in a read-only transaction, a killed connection.
func TestMySQL_ServerErrors(t *testing.T) {
	db := sqltest.MariaDB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE k (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO k VALUES (1, 0), (2, 0)"); err != nil {
		t.Fatal(err)
	}
	begin := func() *sql.Tx {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	unavailable := func(what string, err error) {
		t.Helper()
		if m := sqldb.Map(err, what); !redstate.IsCode(m, redstate.EUNAVAILABLE) {
			t.Errorf("%s: %v (mapped %v), want EUNAVAILABLE", what, err, m)
		}
	}

	a, b := begin(), begin()
	if _, err := a.ExecContext(ctx, "UPDATE k SET v = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, err := b.ExecContext(ctx, "UPDATE k SET v = 2 WHERE id = 1")
	unavailable("lock wait timeout", err)
	_ = a.Rollback()
	_ = b.Rollback()

	a, b = begin(), begin()
	if _, err := a.ExecContext(ctx, "UPDATE k SET v = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, "UPDATE k SET v = 1 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { _, err := a.ExecContext(ctx, "UPDATE k SET v = 2 WHERE id = 2"); errs <- err }()
	time.Sleep(200 * time.Millisecond)
	_, errB := b.ExecContext(ctx, "UPDATE k SET v = 2 WHERE id = 1")
	errA := <-errs
	var my *mysql.MySQLError
	if !errors.As(errB, &my) || my.Number != 1213 {
		if !errors.As(errA, &my) || my.Number != 1213 {
			t.Fatalf("no deadlock: %v / %v", errA, errB)
		}
	}
	unavailable("deadlock", my)
	_ = a.Rollback()
	_ = b.Rollback()

	ro, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ro.ExecContext(ctx, "UPDATE k SET v = 3 WHERE id = 1")
	_ = ro.Rollback()
	if m := sqldb.Map(err, "write"); !redstate.IsCode(m, redstate.EUNAVAILABLE) || !strings.Contains(m.Error(), "read-only") {
		t.Errorf("write in a read-only transaction: %v", m)
	}

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "KILL CONNECTION ?", id); err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, "SELECT 1")
	unavailable("killed connection", err)
}

// TestMySQL_TimeAndText: whatever the server's time_zone (the test server's is +05:30), a
// TIMESTAMP and a DATETIME written from Go read back as the same instant in UTC, and the
// server computes UTC (the session time_zone is +00:00); a 4-byte character round-trips.
// DSN parameters that would change any of this are overridden.
func TestMySQL_TimeAndText(t *testing.T) {
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqltest.MariaDBDSN(t)+"?charset=latin1&parseTime=false&loc=Local&multiStatements=true&time_zone=%27%2B02%3A00%27")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var global, session, charset string
	if err := db.QueryRowContext(ctx, "SELECT @@global.time_zone, @@session.time_zone, @@character_set_client").Scan(&global, &session, &charset); err != nil {
		t.Fatal(err)
	}
	if global != sqltest.MariaDBTimeZone || session != "+00:00" || charset != "utf8mb4" {
		t.Fatalf("time zones: global %q, session %q, charset %q; want %q, +00:00, utf8mb4", global, session, charset, sqltest.MariaDBTimeZone)
	}
	if _, err := db.ExecContext(ctx, "SELECT 1; SELECT 2"); err == nil {
		t.Error("two statements in one call were accepted")
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE tt (id BIGINT PRIMARY KEY, ts TIMESTAMP(6) NULL, dt DATETIME(6) NULL, s VARCHAR(50) NOT NULL) DEFAULT CHARSET=utf8mb4"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 29, 1, 30, 0, 123456000, time.FixedZone("CET", 3600))
	title := "标题 🚀 ok"
	if _, err := db.ExecContext(ctx, "INSERT INTO tt VALUES (1, ?, ?, ?)", at, at, title); err != nil {
		t.Fatal(err)
	}
	var ts, dt time.Time
	var s string
	var unix int64
	if err := db.QueryRowContext(ctx, "SELECT ts, dt, s, FLOOR(UNIX_TIMESTAMP(ts)) FROM tt WHERE id = 1").Scan(&ts, &dt, &s, &unix); err != nil {
		t.Fatal(err)
	}
	if !ts.Equal(at) || !dt.Equal(at) || ts.Location() != time.UTC || unix != at.Unix() {
		t.Errorf("read back ts %v, dt %v, unix %d; want %v (%d) in UTC", ts, dt, unix, at, at.Unix())
	}
	if s != title {
		t.Errorf("text read back %q, want %q", s, title)
	}
	var now time.Time
	if err := db.QueryRowContext(ctx, "SELECT NOW(6)").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(now); d < -time.Minute || d > time.Minute {
		t.Errorf("server NOW() read as %v, %v away from the client's clock", now, d)
	}
}

// TestMariaDBHarness: the test server is what a binlog reader needs (binary log on, ROW
// format, FULL images, a server id) and its user holds the replication privileges.
func TestMariaDBHarness(t *testing.T) {
	db := sqltest.MariaDB(t)
	ctx := context.Background()
	var logBin, format, image string
	var serverID int
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@server_id").Scan(&logBin, &format, &image, &serverID); err != nil {
		t.Fatal(err)
	}
	if logBin != "1" || format != "ROW" || image != "FULL" || serverID != 1 {
		t.Errorf("log_bin %s, binlog_format %s, binlog_row_image %s, server_id %d", logBin, format, image, serverID)
	}
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var grants []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			t.Fatal(err)
		}
		grants = append(grants, g)
	}
	all := strings.Join(grants, "\n")
	if !strings.Contains(all, "ALL PRIVILEGES ON *.*") {
		t.Errorf("grants of %s: %s", sqltest.MariaDBUser, all)
	}
	srv := sqltest.MariaDBTestServer(t)
	if srv.Port == 0 || srv.DataDir == "" || !strings.Contains(srv.DSN("x"), sqltest.MariaDBUser) {
		t.Errorf("server %+v", srv)
	}
	// A restart, normal or a crash, keeps committed data; the pool reconnects.
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	for i, crash := range []bool{false, true} {
		if _, err := db.ExecContext(ctx, "INSERT INTO kept VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
		srv.Restart(t, crash)
		var n int
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM kept").Scan(&n)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after restart (crash %v): %v", crash, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n != i+1 {
			t.Fatalf("after restart (crash %v) %d rows, want %d", crash, n, i+1)
		}
	}
}
