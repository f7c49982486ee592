package mysqlsource_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
)

func leader(src *mysqlsource.Source) bool {
	_, ok := src.Leader()
	return ok
}

// readerAndStandby runs two sources of f logging into logA and logB, b only once a reads the
// binlog, and returns them with a's stop; both are stopped at the latest when the test ends.
func (f *fixture) readerAndStandby(t *testing.T, logA, logB *syncBuffer) (a, b *mysqlsource.Source, stopA func() error) {
	t.Helper()
	a, b = f.source(t, logTo(logA)), f.source(t, logTo(logB))
	stopA = run(a)
	t.Cleanup(func() { _ = stopA() })
	await(t, 30*time.Second, "a to read the binlog", func() bool { return leader(a) })
	stopB := run(b)
	t.Cleanup(func() { _ = stopB() })
	return a, b, stopA
}

// TestLease_OneReaderThenCleanHandOver: of two sources on one server and one Redis exactly one
// reads the binlog; the other stays standby (no events, no position written, "standby" logged
// once) and takes over as soon as the reader stops cleanly, from the recorded position.
func TestLease_OneReaderThenCleanHandOver(t *testing.T) {
	f := setup(t, 300)
	var logB syncBuffer
	a, b, stopA := f.readerAndStandby(t, &syncBuffer{}, &logB)
	f.writes(t, 1, 20)
	f.caughtUp(t, a)
	await(t, 10*time.Second, "b to log standby", func() bool { return strings.Contains(logB.String(), "standby") })
	time.Sleep(3 * time.Second) // b polls the lease meanwhile
	if leader(b) || !b.Standby() || b.Events.Load() != 0 || b.SnapshotRows.Load() != 0 || b.Position() != (mysqlsource.Position{}) {
		t.Fatalf("standby b: leader %v, standby %v, events %d, snapshot rows %d, position %v",
			leader(b), b.Standby(), b.Events.Load(), b.SnapshotRows.Load(), b.Position())
	}
	if a.Standby() {
		t.Fatal("the reader a says standby")
	}
	if n := strings.Count(logB.String(), "standby"); n != 1 {
		t.Fatalf("b logged standby %d times, want once per change of state:\n%s", n, logB.String())
	}
	fenceA, _ := a.Leader()
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	await(t, 10*time.Second, "b to take over after a clean stop", func() bool { return leader(b) })
	t.Logf("b took over %s after a stopped", time.Since(start).Round(time.Millisecond))
	if b.Standby() {
		t.Fatal("b says standby after taking over")
	}
	if fenceB, _ := b.Leader(); fenceB <= fenceA {
		t.Fatalf("b's fence %d is not above a's %d", fenceB, fenceA)
	}
	f.writes(t, 21, 20)
	f.caughtUp(t, b)
	if b.SnapshotRows.Load() != 0 || b.Events.Load() == 0 {
		t.Fatalf("b after taking over: snapshot rows %d, events %d: want a resume from the position", b.SnapshotRows.Load(), b.Events.Load())
	}
	f.verify(t)
}

// TestLease_TakeoverWhenTheLeaseExpires: the lease key disappears under a streaming reader (what
// an expiry looks like) while rows are written; the standby takes over within seconds, the old
// reader's fenced writes are refused so it stops (its recorded position and events frozen) and
// goes standby, and every row written throughout reaches the index.
func TestLease_TakeoverWhenTheLeaseExpires(t *testing.T) {
	f := setup(t, 500)
	var logA syncBuffer
	a, b, _ := f.readerAndStandby(t, &logA, &syncBuffer{})
	f.caughtUp(t, a)

	var written atomic.Int64
	stopWriter := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stopWriter:
				return
			default:
			}
			if _, err := f.db.ExecContext(context.Background(), fmt.Sprintf(
				"INSERT INTO items (id, las, cat, name) VALUES (%d, %d, %d, 'live')", 300000+i, i%7, i%5)); err != nil {
				t.Error(err)
				return
			}
			if _, err := f.db.ExecContext(context.Background(), fmt.Sprintf("UPDATE items SET cat = cat + 1 WHERE id = %d", 1+i%500)); err != nil {
				t.Error(err)
				return
			}
			written.Add(1)
		}
	})
	await(t, 30*time.Second, "a to stream live writes", func() bool { return a.Events.Load() > 20 })
	if err := f.client.Del(context.Background(), a.Keys().Lease).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	await(t, 15*time.Second, "b to take over and a to stop", func() bool { return leader(b) && !leader(a) })
	t.Logf("takeover %s after the lease key was deleted, %d rows written so far", time.Since(start).Round(time.Millisecond), written.Load())
	posA, eventsA := a.Position(), a.Events.Load()
	await(t, 30*time.Second, "b to stream live writes", func() bool { return b.Events.Load() > 20 })
	close(stopWriter)
	wg.Wait()
	f.caughtUp(t, b)
	if !strings.Contains(logA.String(), "binlog lease lost") {
		t.Fatalf("a did not log the lost lease:\n%s", logA.String())
	}
	if leader(a) || a.Position() != posA || a.Events.Load() != eventsA {
		t.Fatalf("old reader after the takeover: leader %v, position %v (was %v), events %d (was %d)",
			leader(a), a.Position(), posA, a.Events.Load(), eventsA)
	}
	if b.SnapshotRows.Load() != 0 {
		t.Fatalf("b snapshotted %d rows: want a resume from a's position", b.SnapshotRows.Load())
	}
	t.Logf("%d rows written during the takeover; a applied %d events, b %d", written.Load(), eventsA, b.Events.Load())
	f.verify(t)
}

// TestSource_ResnapshotWhileRunning: Resnapshot while a source streams deletes its position
// and lease; the source notices, acquires the lease again, takes a new snapshot and streams on,
// and the index equals the table.
func TestSource_ResnapshotWhileRunning(t *testing.T) {
	f := setup(t, 400)
	src := f.source(t)
	stop := run(src)
	defer stop()
	f.writes(t, 1, 10)
	f.caughtUp(t, src)
	first := src.SnapshotRows.Load()
	fence, _ := src.Leader()
	r, err := mysqlsource.Resnapshot(context.Background(), f.client, src.Keys())
	if err != nil {
		t.Fatal(err)
	}
	if r.Position == "" || r.Snapshot == "" || r.ProgressTables != 1 || r.LeaseHolder == "" {
		t.Fatalf("Resnapshot = %+v: want the position, snapshot, one table's progress and the lease", r)
	}
	await(t, 30*time.Second, "a new snapshot", func() bool { return src.SnapshotRows.Load() > first })
	f.writes(t, 11, 10)
	f.caughtUp(t, src)
	if again, _ := src.Leader(); again <= fence {
		t.Fatalf("fence %d after the resnapshot, want above %d", again, fence)
	}
	if n := strings.Count(f.log.String(), "snapshot started"); n != 2 {
		t.Fatalf("%d snapshots started, want 2:\n%s", n, f.log.String())
	}
	f.verify(t)
}

// TestSource_OnCluster: on Redis Cluster the source's scripts (lease, fenced writes,
// resnapshot) run, its keys sharing one slot: snapshot, stream, resnapshot, snapshot again.
func TestSource_OnCluster(t *testing.T) {
	f := setup(t, 200)
	cluster := redistest.StartCluster(t, 3)
	f.client = cluster.Client(t)
	spec := itemsSpec(f.name)
	spec.HashTag = true
	var err error
	f.ix, err = index.New(redisindex.New(f.client), []index.TableSpec{spec}, index.Options{Prefix: indextest.UniquePrefix(), Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	src := f.source(t)
	stop := run(src)
	defer stop()
	f.writes(t, 1, 10)
	f.caughtUp(t, src)
	if _, err := mysqlsource.Resnapshot(context.Background(), f.client, src.Keys()); err != nil {
		t.Fatal(err)
	}
	await(t, 30*time.Second, "a new snapshot", func() bool { return strings.Count(f.log.String(), "snapshot started") == 2 })
	f.writes(t, 11, 5)
	f.caughtUp(t, src)
	f.verify(t)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := f.client.Exists(context.Background(), src.Keys().Lease).Val(); n != 0 {
		t.Fatal("the lease was not released by the clean stop")
	}
}
