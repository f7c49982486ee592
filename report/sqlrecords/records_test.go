package sqlrecords_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/reporttest"
	"github.com/redstate/redstate/report/sqlrecords"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

func TestMain(m *testing.M) { sqltest.Main(m) }

func newStore(t *testing.T, db *sqldb.DB, opts sqlrecords.Options) *sqlrecords.Store {
	t.Helper()
	s, err := sqlrecords.New(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRecordStoreSuite(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, sqlrecords.Options{})
		reporttest.RunRecordStoreSuite(t, func(*testing.T) report.RecordStore { return s })
	})
}

// TestRetention: with a retention an old record reads as unknown, can be created again, and
// DeleteExpired removes it; without one records stay.
func TestRetention(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		var now atomic.Int64
		now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
		clock := func() time.Time { return time.UnixMicro(now.Load()) }
		s := newStore(t, db, sqlrecords.Options{Retention: time.Hour, Now: clock})
		forever := newStore(t, db, sqlrecords.Options{Now: clock})
		if _, err := s.Submit(ctx, 1, json.RawMessage(`{"q":1}`)); err != nil {
			t.Fatal(err)
		}
		now.Add((2 * time.Hour).Microseconds())
		if _, err := s.Get(ctx, 1); !redstate.IsCode(err, redstate.ENOTFOUND) {
			t.Fatalf("expired Get = %v, want ENOTFOUND", err)
		}
		if _, err := s.SetResult(ctx, 1, json.RawMessage(`1`)); !redstate.IsCode(err, redstate.ENOTFOUND) {
			t.Fatalf("expired SetResult = %v, want ENOTFOUND", err)
		}
		if r, err := forever.Get(ctx, 1); err != nil || r.Status != report.StatusGenerating {
			t.Fatalf("without retention Get = %+v, %v", r, err)
		}
		if n, err := s.DeleteExpired(ctx); err != nil || n != 1 {
			t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
		}
		if _, err := forever.Get(ctx, 1); !redstate.IsCode(err, redstate.ENOTFOUND) {
			t.Fatalf("after DeleteExpired Get = %v", err)
		}
		if _, err := s.Create(ctx, 2, report.StatusDone, nil); err != nil {
			t.Fatal(err)
		}
		now.Add((2 * time.Hour).Microseconds())
		if r, err := s.Submit(ctx, 2, json.RawMessage(`{"q":2}`)); err != nil || r.Status != report.StatusGenerating {
			t.Fatalf("Submit over an expired record = %+v, %v; want a fresh record", r, err)
		}
	})
}

// TestConcurrentSubmits: of many concurrent submits of one id exactly one succeeds, on every
// engines and across two Stores sharing the database (two processes).
func TestConcurrentSubmits(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqldb.DB) {
		stores := []*sqlrecords.Store{newStore(t, db, sqlrecords.Options{}), newStore(t, db, sqlrecords.Options{})}
		ctx := context.Background()
		var ok, conflict atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Go(func() {
				_, err := stores[i%2].Submit(ctx, 42, json.RawMessage(`{"q":1}`))
				switch {
				case err == nil:
					ok.Add(1)
				case report.BusinessCode(err) == report.CodeInvalidOperation:
					conflict.Add(1)
				default:
					t.Errorf("Submit: %v", err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 1 || conflict.Load() != 15 {
			t.Fatalf("%d succeeded, %d refused; want 1 and 15", ok.Load(), conflict.Load())
		}
	})
}
