package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestIndexVerify_SourceMySQL: verify --source mysql reads the followed table from MariaDB:
// clean after a replay of its rows, the difference after a change in MariaDB, clean after
// --repair.
func TestIndexVerify_SourceMySQL(t *testing.T) {
	dsn := sqltest.MariaDBDSN(t)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	if err := db.QueryRow("SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE table1 (id bigint PRIMARY KEY, lastAddrId int NOT NULL, categoryId int NOT NULL, brandId int NULL, yn int NOT NULL DEFAULT 1)"); err != nil {
		t.Fatal(err)
	}
	var events strings.Builder
	for id := 1; id <= 50; id++ {
		if _, err := db.Exec(fmt.Sprintf("INSERT INTO table1 (id, lastAddrId, categoryId) VALUES (%d, %d, 1)", id, id%4)); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&events, `{"db":%q,"table":"table1","op":"insert","row":{"id":%d,"lastAddrId":%d,"categoryId":1,"brandId":null,"yn":1},"version":{"file":"binlog.000001","pos":%d,"row":0}}`+"\n", name, id, id%4, id)
	}
	srv := redistest.StartStandalone(t)
	server := strings.TrimSuffix(dsn, name) // the server URL, no database
	cfg := writeConfig(t, strings.Replace(indexConfig, "db: db1", "db: "+name, 1)+
		"  mysql:\n    url: "+server+"\n    tables: ["+name+".table1]\n")
	eventsPath := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(eventsPath, []byte(events.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--config", cfg, "--redis", srv.URL}
	if out, err := run(t, append([]string{"index", "replay", eventsPath}, base...)...); err != nil || !strings.Contains(out, "50 applied") {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if out, err := run(t, append([]string{"index", "verify", "--source", "mysql"}, base...)...); err != nil || !strings.Contains(out, `"rows":50,"missing":0,"stale":0,"extra":0`) {
		t.Fatalf("verify clean: %v\n%s", err, out)
	}
	if _, err := db.Exec("UPDATE table1 SET lastAddrId = 9 WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, append([]string{"index", "verify", "--source", "mysql"}, base...)...); err == nil || !strings.Contains(out, `"missing":2`) {
		t.Fatalf("verify with a difference: %v\n%s", err, out)
	}
	if out, err := run(t, append([]string{"index", "verify", "--source", "mysql", "--repair"}, base...)...); err != nil {
		t.Fatalf("repair: %v\n%s", err, out)
	}
	if out, err := run(t, append([]string{"index", "verify", "--source", "mysql"}, base...)...); err != nil || !strings.Contains(out, `"missing":0,"stale":0,"extra":0`) {
		t.Fatalf("verify after repair: %v\n%s", err, out)
	}
}
