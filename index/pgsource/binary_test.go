package pgsource_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/pgsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestSource_BinaryColumns: bytea values 00 FF 80 00 (the key) and 00 FF 80 (not UTF-8), which
// pgoutput, wal2json and the backfill's row_to_json all write as bytea text ("\x00ff80"), end
// as the row every other source gives (indextest.CheckBinaryRow: standard base64, one key, one
// id), through the backfill and the stream of each plugin, in bytea_output hex (the default) and
// escape; verify from row_to_json finds the index equal to the table.
func TestSource_BinaryColumns(t *testing.T) {
	for _, plugin := range plugins {
		for _, path := range []string{"backfill", "stream"} {
			for _, output := range []string{"hex", "escape"} {
				t.Run(plugin+"/"+path+"/"+output, func(t *testing.T) {
					dsn := sqltest.PostgresDSN(t)
					db := openWith(t, dsn, "")
					// Every later session of the database, the walsender's and the pool's the
					// source reads with included.
					if _, err := db.ExecContext(context.Background(), "ALTER DATABASE "+currentDatabase(t, db)+" SET bytea_output = "+output); err != nil {
						t.Fatal(err)
					}
					db = openWith(t, dsn, output)
					exec := func(q string) {
						t.Helper()
						if _, err := db.ExecContext(context.Background(), q); err != nil {
							t.Fatalf("%s: %v", q, err)
						}
					}
					exec("CREATE TABLE blobs (uid bytea PRIMARY KEY, code bytea, note text NOT NULL)")
					insert := `INSERT INTO blobs VALUES ('\x00ff8000', '\x00ff80', 'x')`
					if path == "backfill" {
						exec(insert)
					}
					slot := "s_" + strings.TrimPrefix(indextest.UniquePrefix(), "t")
					t.Cleanup(func() { dropSlot(t, db, slot) })
					client := redistest.StartStandalone(t).Client(t)
					ix, err := index.New(redisindex.New(client), []index.TableSpec{indextest.BinaryTable("shop")}, index.Options{Prefix: indextest.UniquePrefix()})
					if err != nil {
						t.Fatal(err)
					}
					src, err := pgsource.New(ix, pgsource.Options{DB: db, URL: dsn, Plugin: plugin, Redis: client, Slot: slot, Database: "shop",
						Tables: []string{"blobs"}, PollInterval: 20 * time.Millisecond, StatusInterval: 100 * time.Millisecond, ErrorDelay: 50 * time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() { _ = src.Run(ctx); close(done) }()
					defer func() { cancel(); <-done }()
					if path == "stream" {
						backfill := ix.BlockKeys().Postgres(slot).Backfill
						await(t, "the backfill of the empty table", func() bool {
							return client.HGet(context.Background(), backfill, "blobs").Val() == "\x00done"
						})
						exec(insert)
					}
					await(t, "the row", func() bool {
						if st := ix.Stats("shop", "blobs"); st.Failed.Load() > 0 {
							dl, _ := client.LRange(context.Background(), ix.DeadLetterKey(), 0, -1).Result()
							t.Fatalf("failed changes: %v", dl)
						}
						rows, err := ix.Query(context.Background(), "shop", "blobs", map[string]string{"code": indextest.BinaryCodeText})
						return err == nil && len(rows) > 0
					})
					if backfilled := src.BackfilledRows.Load(); backfilled != map[string]int64{"backfill": 1, "stream": 0}[path] {
						t.Errorf("backfilled %d rows on the %s path", backfilled, path)
					}
					indextest.CheckBinaryRow(t, ix, "shop")
					rep, err := ix.Verify(context.Background(), "shop", "blobs", rowsToJSON(db, "blobs"), index.EncodingPostgres, false, nil)
					if err != nil || !rep.Clean() {
						t.Fatalf("verify: %+v %v", rep, err)
					}
				})
			}
		}
	}
}

// openWith opens dsn, checking that its sessions have bytea_output output (unless empty).
func openWith(t *testing.T, dsn, output string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var got string
	if err := db.QueryRow("SHOW bytea_output").Scan(&got); err != nil || output != "" && got != output {
		t.Fatalf("bytea_output %q (%v), want %q", got, err, output)
	}
	return db
}

// currentDatabase is db's database name.
func currentDatabase(t *testing.T, db *sqldb.DB) string {
	t.Helper()
	var name string
	if err := db.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// rowsToJSON reads table's rows by row_to_json, as redstate index verify does.
func rowsToJSON(db *sqldb.DB, table string) index.RowSource {
	return func(yield func(map[string]*string) bool) error {
		rows, err := db.QueryContext(context.Background(), "SELECT row_to_json(t)::text FROM "+table+" t")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var js string
			if err := rows.Scan(&js); err != nil {
				return err
			}
			var cols map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &cols); err != nil {
				return err
			}
			if !yield(index.TextRow(cols)) {
				return nil
			}
		}
		return rows.Err()
	}
}

// await polls cond every 20ms until it holds, failing after a minute.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
