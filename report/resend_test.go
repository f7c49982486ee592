package report_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
)

// isEnqueue is the stall's trigger: the enqueue (a script now, a plain LPUSH before).
func isEnqueue(c redis.Cmder) bool { return c.Name() == "evalsha" || c.Name() == "lpush" }

// TestSubmit_StalledRedisEnqueuesOnce: a report submitted once is generated once. Redis stalls
// longer than redis.read-timeout while a report is submitted; go-redis sends the enqueue again and
// both copies used to land on report:queue (two identical entries, one JobId), so the report was
// generated twice at once. The same for a regeneration. Each now leaves one job, in the legacy
// application's message format, which a legacy consumer BRPOPs as before.
func TestSubmit_StalledRedisEnqueuesOnce(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.ResendClient(t)
	b, err := redisqueue.New(client, redisqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	records := memrecords.New(memrecords.Options{})
	svc, err := report.NewService(b, records, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := report.NewAdmin(b, records, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	answers := json.RawMessage(`{"q":[1,2,3]}`)
	if _, err := svc.Submit(ctx, 1, answers); err != nil { // loads the enqueue script
		t.Fatal(err)
	}
	runs := srv.RunStalled(t, isEnqueue, func() {
		if _, err := svc.Submit(ctx, 2, answers); err != nil {
			t.Errorf("Submit: %v", err)
		}
	}, "evalsha", "lpush")
	jobs := func() map[int64]int {
		t.Helper()
		raws, err := client.LRange(ctx, report.DefaultQueue, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := map[int64]int{}
		for _, raw := range raws {
			m, err := queue.DecodeMessage([]byte(raw))
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			id, err := report.RecordIDOf(m)
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			n[id]++
		}
		return n
	}
	if n := jobs(); n[1] != 1 || n[2] != 1 || len(n) != 2 {
		t.Fatalf("jobs per record %v after two submits, want one each", n)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d enqueues during the stall, want 2 (the submit's and the client's copy)", runs)
	}
	runs = srv.RunStalled(t, isEnqueue, func() {
		if err := admin.Regenerate(ctx, 2); err != nil {
			t.Errorf("Regenerate: %v", err)
		}
	}, "evalsha", "lpush")
	if n := jobs(); n[2] != 2 {
		t.Fatalf("jobs per record %v after a regeneration of record 2, want two for it", n)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d enqueues during the stall, want 2", runs)
	}
}
