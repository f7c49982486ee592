package redisindex_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
)

// The tests of this file stall Redis longer than the client's read timeout while one write is
// on its way, so that go-redis sends it again and both copies run when Redis continues
// (redistest.RunStalled).

// isWrite is the stall's trigger: a script, or the MULTI counters were added in before.
func isWrite(c redis.Cmder) bool { return c.Name() == "evalsha" || c.Name() == "multi" }

// TestResend_CountersAddedOnce: adding counters in a MULTI (not re-sent) failed when Redis
// answered too late although the counts were added, and the indexer, keeping what failed for
// its next flush, added them again. Now the add is re-sent and its copy answers as the first:
// no error, the counts added once.
func TestResend_CountersAddedOnce(t *testing.T) {
	srv := redistest.StartStandalone(t)
	s := redisindex.New(srv.ResendClient(t))
	ctx := context.Background()
	ref := index.TableRef{DB: "shop", Table: "orders"}
	add := index.CounterSet{Tables: map[index.TableRef]index.Counters{ref: {Applied: 3, Stale: 1}}, Skipped: 2}
	if err := s.AddCounters(ctx, "ix:counters", add); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := srv.RunStalled(t, isWrite, func() { err = s.AddCounters(ctx, "ix:counters", add) }, "evalsha", "multi")
	if err != nil {
		t.Fatalf("AddCounters: %v", err)
	}
	got, err := s.Counters(ctx, "ix:counters")
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Tables[ref]; c.Applied != 6 || c.Stale != 2 || got.Skipped != 4 {
		t.Fatalf("counters %+v, want twice the set added", got)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d writes during the stall, want 2 (the call and its copy)", runs)
	}
}

// TestResend_DeadLetterPushedOnce: a dead letter pushed once is on the list once.
func TestResend_DeadLetterPushedOnce(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.ResendClient(t)
	s := redisindex.New(client)
	ctx := context.Background()
	if err := s.DeadLetter(ctx, "ix:deadletter", []byte(`{"n":1}`), 10); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := srv.RunStalled(t, isWrite, func() { err = s.DeadLetter(ctx, "ix:deadletter", []byte(`{"n":2}`), 10) }, "evalsha")
	if err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	if l := client.LRange(ctx, "ix:deadletter", 0, -1).Val(); len(l) != 2 || l[0] != `{"n":2}` {
		t.Fatalf("dead letters %q, want the two entries once each", l)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d writes during the stall, want 2 (the call and its copy)", runs)
	}
}

// TestResend_ApplyIsIdempotent: a row change sent twice is applied once: the copy finds its
// own version stored and is a stale no-op. The store then reports the change Stale, so the
// applied/stale counters may count it as stale; the row is right.
func TestResend_ApplyIsIdempotent(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.ResendClient(t)
	s := redisindex.New(client)
	ctx := context.Background()
	write := func(id, version, row string) index.RowWrite {
		return index.RowWrite{VersionKey: "ix:t:fil-" + id, TablePrefix: "ix:t:", FloorKey: "ix:t:truncated", LayoutKey: "ix:t:layout", ID: id,
			Version: index.Version(version), Stamp: "2025-01-15T10:30:00", Row: json.RawMessage(row),
			Keys: []string{"ix:t:st-a"}, TTL: time.Hour}
	}
	if _, err := s.Apply(ctx, []index.RowWrite{write("0", "1", `{"id":0}`)}); err != nil {
		t.Fatal(err)
	}
	var out []index.Outcome
	var err error
	runs := srv.RunStalled(t, isWrite, func() { out, err = s.Apply(ctx, []index.RowWrite{write("1", "1", `{"id":1}`)}) }, "evalsha")
	if err != nil || len(out) != 1 {
		t.Fatalf("Apply = %v, %v", out, err)
	}
	rows := client.HGetAll(ctx, "ix:t:st-a").Val()
	if len(rows) != 2 || rows["1"] != `{"id":1}` || client.Get(ctx, "ix:t:fil-1").Val() != "1|2025-01-15T10:30:00|st-a" {
		t.Fatalf("index %v, version %q", rows, client.Get(ctx, "ix:t:fil-1").Val())
	}
	if runs != 2 {
		t.Fatalf("clients sent %d writes during the stall, want 2 (the call and its copy)", runs)
	}
}
