package cli

import (
	"strings"
	"testing"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

func TestQueueCommands_DeadLettersStatsRegenerate(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	ctx := t.Context()
	legacy := `{"RecordId":12345,"RetryCount":3,"EnqueueTime":"2025-01-15T10:30:00"}`
	if err := client.LPush(ctx, "report:queue:dead", legacy).Err(); err != nil {
		t.Fatal(err)
	}
	records, err := redisqueue.NewRecords(client, redisqueue.RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := records.Create(ctx, 7, queue.StatusFailed, nil); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, "queue", "dead", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, `"RecordId\":12345`) {
		t.Fatalf("queue dead = %v:\n%s", err, out)
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
	out, err = run(t, "queue", "stats", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, `"pending":1`) || !strings.Contains(out, `"dead":0`) {
		t.Fatalf("queue stats = %v: %s", err, out)
	}
	out, err = run(t, "queue", "regenerate", "7", "999", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, `"SuccessCount":1`) || !strings.Contains(out, `"SkippedCount":1`) {
		t.Fatalf("queue regenerate = %v: %s", err, out)
	}
	if _, err := run(t, "queue", "regenerate", "x", "--redis", srv.URL); err == nil {
		t.Fatal("queue regenerate accepted a non-numeric id")
	}
}
