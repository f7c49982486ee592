package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/redisrecords"
	"github.com/redstate/redstate/report/sqlrecords"
	"github.com/redstate/redstate/sqldb"
)

func TestQueueCommands_DeadLettersStatsRegenerate(t *testing.T) {
	t.Setenv("REDSTATE_QUEUE_RECORD_STORE", "redis") // this test's records are in Redis
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	ctx := t.Context()
	legacy := `{"RecordId":12345,"RetryCount":3,"EnqueueTime":"2025-01-15T10:30:00"}`
	if err := client.LPush(ctx, "report:queue:dead", legacy).Err(); err != nil {
		t.Fatal(err)
	}
	records, err := redisrecords.New(client, redisrecords.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := records.Create(ctx, 7, report.StatusFailed, nil); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, "queue", "dead", "--json", "--redis", srv.URL)
	if err != nil || !strings.HasPrefix(out, `{"queue":"report:queue","start":0,"deadLetters":[`) || !strings.Contains(out, `"RecordId\":12345`) {
		t.Fatalf("queue dead --json = %v:\n%s", err, out)
	}
	out, err = run(t, "queue", "dead", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, "RECORD") || !strings.Contains(out, "12345") {
		t.Fatalf("queue dead (table) = %v:\n%s", err, out)
	}
	if _, err := run(t, "queue", "purge", "--redis", srv.URL); err == nil || !strings.Contains(err.Error(), "delete all 1 dead letters") || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("queue purge without --yes = %v", err)
	}
	if _, err := run(t, "queue", "requeue", "--all", "--redis", srv.URL); err == nil || !strings.Contains(err.Error(), "move all 1 dead letters") {
		t.Fatalf("queue requeue --all without --yes = %v", err)
	}
	if out, err := run(t, "queue", "requeue", "--all", "--yes", "--redis", srv.URL); err != nil || !strings.Contains(out, "requeued 1") {
		t.Fatalf("queue requeue --all = %v: %s", err, out)
	}
	out, err = run(t, "queue", "stats", "--json", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, `"queue":"report:queue"`) || !strings.Contains(out, `"pending":1`) || !strings.Contains(out, `"dead":0`) {
		t.Fatalf("queue stats --json = %v: %s", err, out)
	}
	out, err = run(t, "queue", "stats", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, "PENDING") || !strings.Contains(out, "report:queue") {
		t.Fatalf("queue stats (table) = %v: %s", err, out)
	}
	out, err = run(t, "queue", "regenerate", "7", "999", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, `"SuccessCount":1`) || !strings.Contains(out, `"SkippedCount":1`) {
		t.Fatalf("queue regenerate = %v: %s", err, out)
	}
	if _, err := run(t, "queue", "regenerate", "x", "--redis", srv.URL); err == nil {
		t.Fatal("queue regenerate accepted a non-numeric id")
	}
}

// TestQueueRegenerate_ReadsRecordsFromSQL: with the default record store (SQL), regenerate finds
// a failed record in the database (it used to read Redis and skip every id).
func TestQueueRegenerate_ReadsRecordsFromSQL(t *testing.T) {
	srv := redistest.StartStandalone(t)
	dir := t.TempDir()
	db, err := sqldb.Open(t.Context(), "sqlite:"+filepath.Join(dir, "redstate.db"))
	if err != nil {
		t.Fatal(err)
	}
	records, err := sqlrecords.New(t.Context(), db, sqlrecords.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := records.Create(t.Context(), 8, report.StatusFailed, nil); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	out, err := run(t, "queue", "regenerate", "8", "--redis", srv.URL, "--data-dir", dir)
	if err != nil || !strings.Contains(out, `"SuccessCount":1`) {
		t.Fatalf("queue regenerate from SQL = %v: %s", err, out)
	}
	if n := srv.Client(t).LLen(t.Context(), "report:queue").Val(); n != 1 {
		t.Fatalf("report:queue holds %d jobs after regenerate, want 1", n)
	}
}

// TestSQLCommands_RefuseAMissingDatabase: run from a directory where serve never ran, the
// commands that read the SQL truth refuse with the absolute path they looked at and the flags
// that point elsewhere, instead of creating an empty database and reporting on nothing (issue
// 32 item 7: "verified 0 users", a skipped regenerate, counts of 0); nothing is created.
func TestSQLCommands_RefuseAMissingDatabase(t *testing.T) {
	srv := redistest.StartStandalone(t)
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	want := filepath.Join(elsewhere, "redstate-data", "redstate.db")
	for _, args := range [][]string{
		{"queue", "regenerate", "777"},
		{"feed", "verify"},
		{"feed", "counts", "--user", "3"},
		{"feed", "rebuild", "--yes"},
	} {
		_, err := run(t, append(args, "--redis", srv.URL)...)
		if err == nil || !strings.Contains(err.Error(), "no SQL database at "+want) || !strings.Contains(err.Error(), "--data-dir") {
			t.Errorf("%v from another directory: %v; want an error naming %s and --data-dir", args, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "redstate-data")); !os.IsNotExist(err) {
		t.Errorf("a command created %s: %v", filepath.Join(elsewhere, "redstate-data"), err)
	}
}
