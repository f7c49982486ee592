package memqueue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/queuetest"
)

func newBroker(*testing.T) queue.Broker { return memqueue.NewBroker(memqueue.Options{}) }

func TestBrokerSuite(t *testing.T) {
	queuetest.RunBrokerSuite(t, newBroker, queuetest.Features{})
}

func TestWorkerSuite(t *testing.T) {
	queuetest.RunWorkerSuite(t, newBroker, queuetest.Features{})
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

func TestLease_ExpiresOnInjectedClock(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	b := memqueue.NewBroker(memqueue.Options{Now: clk.Now})
	ctx := context.Background()
	if err := b.Heartbeat(ctx, "q", "c", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Enqueue(ctx, "q", queue.NewMessage(clk.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Dequeue(ctx, "q", "c", time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Add(59 * time.Second)
	if n, _ := b.RecoverExpired(ctx, "q"); n != 0 {
		t.Fatalf("recovered %d before expiry", n)
	}
	clk.Add(time.Second)
	if n, _ := b.RecoverExpired(ctx, "q"); n != 1 {
		t.Fatalf("recovered %d at expiry, want 1", n)
	}
	if st, _ := b.Stats(ctx, "q"); st != (queue.Stats{Pending: 1}) {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestThroughputSuite(t *testing.T) {
	queuetest.RunThroughputSuite(t, func(*testing.T) queue.ThroughputStore { return memqueue.NewBroker(memqueue.Options{}) })
}

// TestEnqueue_JobIDWindowEnds: a job id is a copy for queue.DedupWindow after its enqueue (by
// Options.Now), and a new job afterwards; the ids of ended windows are swept.
func TestEnqueue_JobIDWindowEnds(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	b := memqueue.NewBroker(memqueue.Options{Now: clk.Now})
	ctx := context.Background()
	m := queue.NewMessage(clk.Now(), nil)
	enqueue := func() {
		t.Helper()
		if err := b.Enqueue(ctx, "q", m); err != nil {
			t.Fatal(err)
		}
	}
	enqueue()
	clk.Add(queue.DedupWindow - time.Nanosecond)
	enqueue()
	if st, _ := b.Stats(ctx, "q"); st.Pending != 1 {
		t.Fatalf("pending %d within the window, want 1", st.Pending)
	}
	clk.Add(time.Nanosecond)
	enqueue()
	if st, _ := b.Stats(ctx, "q"); st.Pending != 2 {
		t.Fatalf("pending %d after the window, want 2", st.Pending)
	}
	// Many ids later, the first window has ended and been swept: the id is enqueued once more,
	// and once only.
	clk.Add(queue.DedupWindow)
	for range 3000 {
		if err := b.Enqueue(ctx, "q", queue.NewMessage(clk.Now(), nil)); err != nil {
			t.Fatal(err)
		}
	}
	enqueue()
	enqueue()
	if st, _ := b.Stats(ctx, "q"); st.Pending != 3003 {
		t.Fatalf("pending %d, want 3003", st.Pending)
	}
}
