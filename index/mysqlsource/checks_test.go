package mysqlsource_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestCheck_MissingReplicationSlave: an account that may read the binlog position but not
// stream the binlog is refused at start with the grant to add, before any snapshot runs.
func TestCheck_MissingReplicationSlave(t *testing.T) {
	f := setup(t, 3)
	user := fmt.Sprintf("noslave%d", time.Now().UnixNano()%1e9)
	f.exec(t,
		"CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, BINLOG MONITOR ON *.* TO '"+user+"'@'%'")
	t.Cleanup(func() { _, _ = f.db.Exec("DROP USER '" + user + "'@'%'") })
	dsn := strings.Replace(f.dsn, sqltest.MariaDBUser+":"+sqltest.MariaDBPassword+"@", user+":pw@", 1)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	src, err := mysqlsource.New(f.ix, mysqlsource.Options{URL: dsn, DB: db, Redis: f.client, Tables: []string{f.name + ".items"}})
	if err != nil {
		t.Fatal(err)
	}
	err = src.Check(context.Background())
	if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), "GRANT REPLICATION SLAVE") {
		t.Fatalf("Check = %v, want EINVALID naming GRANT REPLICATION SLAVE", err)
	}
	if err := f.source(t).Check(context.Background()); err != nil {
		t.Fatalf("the harness account (REPLICATION SLAVE granted): %v", err)
	}
}
