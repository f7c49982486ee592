package pgsource

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
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

// backfillFixture is a PostgreSQL table of rows rows (id 1..rows) and a Redis both runners share.
type backfillFixture struct {
	db     *sqldb.DB
	dsn    string
	client redis.UniversalClient
	prefix string
}

func newBackfillFixture(t *testing.T, rows int) *backfillFixture {
	t.Helper()
	dsn := sqltest.PostgresDSN(t)
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, q := range []string{"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL)",
		"INSERT INTO items SELECT g, g % 7 FROM generate_series(1, " + strconv.Itoa(rows) + ") g"} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	return &backfillFixture{db: db, dsn: dsn, client: redistest.StartStandalone(t).Client(t), prefix: "bf"}
}

// runner is one backfill runner (a process) whose store asks hook before each Apply.
func (f *backfillFixture) runner(t *testing.T, hook func(call int, writes []index.RowWrite) error) *Source {
	t.Helper()
	spec := index.TableSpec{DB: "shop", Table: "items", Key: "id", Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "las", Type: index.TypeInt}},
		Dimensions: [][]index.Part{{{Code: "las", Column: "las"}}}}
	ix, err := index.New(&gatedStore{Store: redisindex.New(f.client), hook: hook}, []index.TableSpec{spec}, index.Options{Prefix: f.prefix})
	if err != nil {
		t.Fatal(err)
	}
	src, err := New(ix, Options{DB: f.db, URL: f.dsn, Redis: f.client, Database: "shop", Tables: []string{"items"}, BackfillPage: 2,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// progress is the recorded backfill progress of items.
func (f *backfillFixture) progress(t *testing.T) string {
	t.Helper()
	v, err := f.client.HGet(context.Background(), f.prefix+":source:pg:"+index.DefaultSlot+":backfill", "items").Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var errInjected = redstate.Errorf(redstate.EUNAVAILABLE, "injected store failure")

// TestBackfill_StaleRunnerProgressRefused: runner a copies the first page and stalls in its
// apply while runner b (a restarted process) claims the backfill and completes it; a's
// progress write after its page is then refused, and the recorded progress stays b's
// "complete" instead of moving back to a's page.
func TestBackfill_StaleRunnerProgressRefused(t *testing.T) {
	f := newBackfillFixture(t, 6)
	applying, release := make(chan struct{}), make(chan struct{})
	a := f.runner(t, func(call int, _ []index.RowWrite) error {
		switch call {
		case 1:
			close(applying)
			<-release
			return nil
		default: // a stale runner that went on would stop here, after its progress write
			return errInjected
		}
	})
	b := f.runner(t, func(int, []index.RowWrite) error { return nil })
	ctx := context.Background()
	aDone := make(chan error, 1)
	go func() { aDone <- a.backfill(ctx, "items", 1) }()
	<-applying
	if err := b.backfill(ctx, "items", 1); err != nil {
		t.Fatalf("b's backfill: %v", err)
	}
	if got := f.progress(t); got != index.SnapshotDone {
		t.Fatalf("progress after b = %q, want done", got)
	}
	close(release)
	err := <-aDone
	if got := f.progress(t); got != index.SnapshotDone {
		t.Fatalf("progress after the stale runner a = %q (a returned %v): a's write moved it back", got, err)
	}
	if !errors.Is(err, errBackfillFenceLost) {
		t.Fatalf("a's backfill = %v, want errBackfillFenceLost", err)
	}
	if n := b.BackfilledRows.Load(); n != 6 {
		t.Fatalf("b copied %d rows, want 6", n)
	}
}

// TestBackfill_ResumesFromRecordedProgress: a runner that fails after two pages leaves their
// last key recorded; the next runner copies only the rows after it, then records the backfill
// complete.
func TestBackfill_ResumesFromRecordedProgress(t *testing.T) {
	f := newBackfillFixture(t, 7)
	a := f.runner(t, func(call int, _ []index.RowWrite) error {
		if call == 3 {
			return errInjected
		}
		return nil
	})
	ctx := context.Background()
	if err := a.backfill(ctx, "items", 1); !errors.Is(err, errInjected) {
		t.Fatalf("a's backfill = %v, want the injected failure", err)
	}
	if got := f.progress(t); got != "4" {
		t.Fatalf("progress after a = %q, want 4", got)
	}
	var firstID string
	b := f.runner(t, func(call int, writes []index.RowWrite) error {
		if call == 1 {
			firstID = writes[0].ID
		}
		return nil
	})
	if err := b.backfill(ctx, "items", 1); err != nil {
		t.Fatalf("b's backfill: %v", err)
	}
	if n := b.BackfilledRows.Load(); n != 3 || firstID != "5" {
		t.Fatalf("b copied %d rows from id %s, want 3 from 5", n, firstID)
	}
	if got := f.progress(t); got != index.SnapshotDone {
		t.Fatalf("progress after b = %q, want done", got)
	}
}
