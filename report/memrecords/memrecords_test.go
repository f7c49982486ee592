package memrecords_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
	"github.com/redstate/redstate/report/reporttest"
)

func newRecords(*testing.T) report.RecordStore { return memrecords.New(memrecords.Options{}) }

func TestRecordStoreSuite(t *testing.T) {
	reporttest.RunRecordStoreSuite(t, newRecords)
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestRecords_RetentionExpires(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	rs := memrecords.New(memrecords.Options{Retention: time.Hour, Now: clk.Now})
	ctx := context.Background()
	if _, err := rs.Submit(ctx, 7, nil); err != nil {
		t.Fatal(err)
	}
	clk.Add(59 * time.Minute)
	if ids, _ := rs.ListGeneratingOlderThan(ctx, 30*time.Minute); len(ids) != 1 || ids[0] != 7 {
		t.Fatalf("ListGeneratingOlderThan = %v", ids)
	}
	clk.Add(time.Minute)
	if _, err := rs.Get(ctx, 7); !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("Get after retention = %v, want ENOTFOUND", err)
	}
}
