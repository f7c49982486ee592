package mysqlsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// gatedStore is a real Redis index store whose Apply calls first ask hook (the call's number
// from 1 and its writes) whether to go on.
type gatedStore struct {
	index.Store
	mu    sync.Mutex
	calls int
	hook  func(call int, writes []index.RowWrite) error
}

func (g *gatedStore) Apply(ctx context.Context, writes []index.RowWrite) ([]index.Outcome, error) {
	g.mu.Lock()
	g.calls++
	call := g.calls
	g.mu.Unlock()
	if err := g.hook(call, writes); err != nil {
		return nil, err
	}
	return g.Store.Apply(ctx, writes)
}

// snapshotFixture is a MariaDB table of rows rows (id 1..rows) and a Redis both runners share.
type snapshotFixture struct {
	db     *sqldb.DB
	name   string // the database
	client redis.UniversalClient
}

func newSnapshotFixture(t *testing.T, rows int) *snapshotFixture {
	t.Helper()
	dsn := sqltest.MariaDBDSN(t)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	f := &snapshotFixture{db: db, client: redistest.StartStandalone(t, redistest.WithAppendOnly(false)).Client(t)}
	if err := db.QueryRow("SELECT DATABASE()").Scan(&f.name); err != nil {
		t.Fatal(err)
	}
	values := make([]string, rows)
	for i := range values {
		values[i] = fmt.Sprintf("(%d, %d)", i+1, (i+1)%7)
	}
	for _, q := range []string{"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL)", "INSERT INTO items VALUES " + strings.Join(values, ",")} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// runner is one snapshot runner (a process) whose store asks hook before each Apply; it holds
// the binlog lease once acquired with take.
func (f *snapshotFixture) runner(t *testing.T, hook func(call int, writes []index.RowWrite) error) *Source {
	t.Helper()
	spec := index.TableSpec{DB: f.name, Table: "items", Key: "id", Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "las", Type: index.TypeInt}},
		Dimensions: [][]index.Part{{{Code: "las", Column: "las"}}}}
	ix, err := index.New(&gatedStore{Store: redisindex.New(f.client), hook: hook}, []index.TableSpec{spec}, index.Options{Prefix: "ss"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := New(ix, Options{URL: "mysql://root@127.0.0.1:3306/", DB: f.db, Redis: f.client, Tables: []string{f.name + ".items"}, SnapshotPage: 2,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// take acquires the binlog lease for s (after deleting it: the holder's lease expired).
func (f *snapshotFixture) take(t *testing.T, s *Source) {
	t.Helper()
	ctx := context.Background()
	if err := f.client.Del(ctx, s.keys.Lease).Err(); err != nil {
		t.Fatal(err)
	}
	l, ok, err := s.acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
	s.token = l.Token
}

// copy runs s's copy of items at a fixed position on a connection of its own.
func (f *snapshotFixture) copy(s *Source) error {
	ctx := context.Background()
	conn, err := s.opts.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return s.copyTable(ctx, conn, f.name+".items", Position{File: "binlog.000001", Pos: 4})
}

// progress is the recorded snapshot progress of items.
func (f *snapshotFixture) progress(t *testing.T, s *Source) string {
	t.Helper()
	v, err := f.client.HGet(context.Background(), s.keys.Progress, f.name+".items").Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var errInjected = redstate.Errorf(redstate.EUNAVAILABLE, "injected store failure")

// TestSnapshot_StaleRunnerProgressRefused: runner a copies the first page and stalls in its
// apply while its lease expires and runner b takes the lease and completes the snapshot; a's
// progress write after its page is refused (errLeaseLost), and the recorded progress stays
// b's "complete".
func TestSnapshot_StaleRunnerProgressRefused(t *testing.T) {
	f := newSnapshotFixture(t, 6)
	applying, release := make(chan struct{}), make(chan struct{})
	a := f.runner(t, func(call int, _ []index.RowWrite) error {
		if call == 1 {
			close(applying)
			<-release
			return nil
		}
		return errInjected // a stale runner that went on would stop here, after its progress write
	})
	b := f.runner(t, func(int, []index.RowWrite) error { return nil })
	f.take(t, a)
	aDone := make(chan error, 1)
	go func() { aDone <- f.copy(a) }()
	<-applying
	f.take(t, b)
	if err := f.copy(b); err != nil {
		t.Fatalf("b's snapshot: %v", err)
	}
	close(release)
	err := <-aDone
	if got := f.progress(t, b); got != index.SnapshotDone {
		t.Fatalf("progress after the stale runner a = %q (a returned %v): a's write moved it back", got, err)
	}
	if !errors.Is(err, errLeaseLost) {
		t.Fatalf("a's snapshot = %v, want errLeaseLost", err)
	}
	if n := b.SnapshotRows.Load(); n != 6 {
		t.Fatalf("b copied %d rows, want 6", n)
	}
}

// TestSnapshot_ResumesFromRecordedProgress: a runner that fails after two pages leaves their
// last key recorded; the next lease holder copies only the rows after it, then records the
// table complete.
func TestSnapshot_ResumesFromRecordedProgress(t *testing.T) {
	f := newSnapshotFixture(t, 7)
	a := f.runner(t, func(call int, _ []index.RowWrite) error {
		if call == 3 {
			return errInjected
		}
		return nil
	})
	f.take(t, a)
	if err := f.copy(a); !errors.Is(err, errInjected) {
		t.Fatalf("a's snapshot = %v, want the injected failure", err)
	}
	if got := f.progress(t, a); got != "4" {
		t.Fatalf("progress after a = %q, want 4", got)
	}
	var firstID string
	b := f.runner(t, func(call int, writes []index.RowWrite) error {
		if call == 1 {
			firstID = writes[0].ID
		}
		return nil
	})
	f.take(t, b)
	if err := f.copy(b); err != nil {
		t.Fatalf("b's snapshot: %v", err)
	}
	if n := b.SnapshotRows.Load(); n != 3 || firstID != "5" {
		t.Fatalf("b copied %d rows from id %s, want 3 from 5", n, firstID)
	}
	if got := f.progress(t, b); got != index.SnapshotDone {
		t.Fatalf("progress after b = %q, want done", got)
	}
}
