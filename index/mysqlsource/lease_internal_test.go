package mysqlsource

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/redistest"
)

// leaseSource is a Source with only what the lease needs, on a fresh Redis.
func leaseSource(t *testing.T, keys Keys) (*Source, *Source) {
	t.Helper()
	client := redistest.StartStandalone(t, redistest.WithAppendOnly(false)).Client(t)
	mk := func() *Source {
		leases, err := newLeader(client, keys, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return &Source{opts: Options{Redis: client, LeaseTTL: 5 * time.Second}, keys: keys, log: slog.New(slog.DiscardHandler), leases: leases}
	}
	return mk(), mk()
}

// release releases the lease s holds with token, as a session's end does (a stale token
// releases nothing).
func release(t *testing.T, s *Source, token string) {
	t.Helper()
	if _, err := s.leases.Store.Release(context.Background(), s.leases.Keys, token); err != nil {
		t.Fatal(err)
	}
}

// TestLease_FencedWritesOfAStaleHolderAreRefused: once another instance holds the lease, the
// old holder's fenced writes (position, snapshot, progress) and renewals are refused and change
// nothing, its release leaves the new holder's lease, and fences only grow, also when the
// counter is lost.
func TestLease_FencedWritesOfAStaleHolderAreRefused(t *testing.T) {
	ctx := context.Background()
	a, b := leaseSource(t, index.NewBlockKeys(redstate.Prefix("", "t")).MySQL())
	client := a.opts.Redis
	la, ok, err := a.acquire(ctx)
	if err != nil || !ok || la.Fence <= 0 {
		t.Fatalf("first acquire = %+v, %v, %v", la, ok, err)
	}
	a.token = la.Token
	if _, ok, err := b.acquire(ctx); err != nil || ok {
		t.Fatalf("second acquire while held = %v, %v: want refused", ok, err)
	}
	if err := a.fenced(ctx, "record binlog position", fencedSetScript, []string{a.keys.Position}, "binlog.000001:100"); err != nil {
		t.Fatal(err)
	}
	// The lease expires (what a DEL looks like) and b takes it.
	if err := client.Del(ctx, a.keys.Lease).Err(); err != nil {
		t.Fatal(err)
	}
	lb, ok, err := b.acquire(ctx)
	if err != nil || !ok || lb.Fence <= la.Fence {
		t.Fatalf("acquire after expiry = %+v, %v, %v: want a fence above %d", lb, ok, err, la.Fence)
	}
	b.token = lb.Token
	for _, w := range []error{
		a.fenced(ctx, "record binlog position", fencedSetScript, []string{a.keys.Position}, "binlog.000001:999"),
		a.fenced(ctx, "record snapshot position", snapshotStartScript, []string{a.keys.Snapshot, a.keys.Progress}, "binlog.000001:999"),
		a.fenced(ctx, "record snapshot progress", fencedHSetScript, []string{a.keys.Progress}, "db.t", "42"),
	} {
		if !errors.Is(w, errLeaseLost) {
			t.Fatalf("stale holder's write = %v, want errLeaseLost", w)
		}
	}
	if pos := client.Get(ctx, a.keys.Position).Val(); pos != "binlog.000001:100" {
		t.Fatalf("position = %q after refused writes", pos)
	}
	if n := client.Exists(ctx, a.keys.Snapshot, a.keys.Progress).Val(); n != 0 {
		t.Fatalf("%d snapshot keys written by the stale holder", n)
	}
	if held, err := a.leases.Store.Renew(ctx, a.leases.Keys, la.Token, 5*time.Second); err != nil || held {
		t.Fatalf("stale renewal = %v, %v: want refused", held, err)
	}
	release(t, a, la.Token)
	if holder := client.Get(ctx, a.keys.Lease).Val(); holder != lb.Token {
		t.Fatalf("lease = %q after the stale holder's release, want b's", holder)
	}
	if err := b.fenced(ctx, "record binlog position", fencedSetScript, []string{b.keys.Position}, "binlog.000001:200"); err != nil {
		t.Fatal(err)
	}
	// A lost fence counter is seeded above every fence issued.
	release(t, b, lb.Token)
	if err := client.Del(ctx, b.keys.Fence).Err(); err != nil {
		t.Fatal(err)
	}
	lc, ok, err := a.acquire(ctx)
	if err != nil || !ok || lc.Fence <= lb.Fence {
		t.Fatalf("acquire after the fence was lost = %+v, %v, %v: want a fence above %d", lc, ok, err, lb.Fence)
	}
}

// TestLease_FenceAboveEveryEarlierAfterTheCounterWentBack: a failover that lost the fence
// counter's last INCRs (the promoted replica holds it, behind) must not make the next
// acquisition reuse a fence already handed out.
func TestLease_FenceAboveEveryEarlierAfterTheCounterWentBack(t *testing.T) {
	ctx := context.Background()
	a, _ := leaseSource(t, index.NewBlockKeys(redstate.Prefix("", "t")).MySQL())
	client := a.opts.Redis
	var fences []int64
	for range 2 {
		l, ok, err := a.acquire(ctx)
		if err != nil || !ok {
			t.Fatalf("acquire = %v, %v", ok, err)
		}
		release(t, a, l.Token)
		fences = append(fences, l.Fence)
	}
	f1, f2 := fences[0], fences[1]
	if f2 <= f1 {
		t.Fatalf("fences %d then %d: want increasing", f1, f2)
	}
	// The failover lost the second acquisition's INCR: the counter is back at f1.
	if err := client.Set(ctx, a.keys.Fence, f1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	l, ok, err := a.acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("acquire after the counter went back = %v, %v", ok, err)
	}
	if l.Fence <= f2 {
		t.Fatalf("fence %d after the counter went back to %d: want above every earlier fence (%d)", l.Fence, f1, f2)
	}
}

// TestKeys_ShareOneSlot: every key of the source hashes to one Cluster slot, with the {mysql}
// tag or, when the prefix holds a tag of its own, with that one.
func TestKeys_ShareOneSlot(t *testing.T) {
	for prefix, tag := range map[redstate.KeyPrefix]string{redstate.Prefix("", "las_im_data_sync"): "mysql", redstate.Prefix("prod-", "{eu}las"): "eu"} {
		k := index.NewBlockKeys(prefix).MySQL()
		for _, key := range []string{k.Position, k.Snapshot, k.Progress, k.Lease, k.Fence} {
			if keyspace.Slot(key) != keyspace.Slot(tag) {
				t.Errorf("prefix %q: %s is in slot %d, want %d (tag %q)", prefix, key, keyspace.Slot(key), keyspace.Slot(tag), tag)
			}
		}
	}
}
