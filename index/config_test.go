package index_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
)

func TestDefaultConfig_IsValid(t *testing.T) {
	if err := index.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigValidate_ReportsEveryProblem: one call names every bad key.
func TestConfigValidate_ReportsEveryProblem(t *testing.T) {
	c := index.DefaultConfig()
	c.DeadLetterMax = 0
	c.Streams.Format = "avro"
	c.Streams.Keys = []string{"s"}
	c.Postgres.URL = "mysql://u:secret@h/db"
	c.Postgres.Slot = "Bad-Slot"
	c.Postgres.Plugin = "decoderbufs"
	c.Postgres.Publication = "Pub"
	c.MySQL.URL = "postgres://u:secret@h/"
	c.MySQL.Tables = []string{"db1.nope"}
	c.MySQL.Flavor = "oracle"
	c.MySQL.LeaseTTL = 500 * time.Millisecond
	err := c.Validate()
	want := []string{
		"index.dead-letter-max: must be at least 1, got 0",
		`index.streams.format: must be debezium, canal or native, got "avro"`,
		"index.streams.keys: are set but no index.tables are declared",
		`index.postgres.url: must be a postgres:// URL, got "mysql://u:***@h/db"`,
		"index.postgres.tables: must name at least one table",
		`index.postgres.slot: must be 1..63 characters from [a-z0-9_], got "Bad-Slot"`,
		`index.postgres.plugin: must be pgoutput or wal2json, got "decoderbufs"`,
		`index.postgres.publication: must be 1..63 characters from [a-z0-9_], got "Pub"`,
		`index.mysql.url: must be a mysql:// URL, got "postgres://u:***@h/"`,
		`index.mysql.tables[0]: "db1.nope" is not a db.table declared in index.tables`,
		`index.mysql.flavor: must be auto, mysql or mariadb, got "oracle"`,
		"index.mysql.lease-ttl: must be at least 1s, got 500ms",
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Fatalf("err = %v, want %d problems", err, len(want))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err lacks %q:\n%v", w, err)
		}
	}
}
