package lease_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/redistest"
)

// waitFor bounds every wait for an event in these tests.
const waitFor = 10 * time.Second

// session is one run of a leader's job.
type session struct {
	who   string
	grant lease.Grant
	// ended carries context.Cause of the job's context when the job returned.
	ended chan error
}

// jobRecorder is a job that reports each session on started, fails the test when two run at
// once, and works until its context ends.
type jobRecorder struct {
	t       *testing.T
	running atomic.Int64
	started chan session
}

func (r *jobRecorder) job(who string) func(ctx context.Context, g lease.Grant) error {
	return func(ctx context.Context, g lease.Grant) error {
		if n := r.running.Add(1); n != 1 {
			r.t.Errorf("%s started while %d other sessions run", who, n-1)
		}
		s := session{who: who, grant: g, ended: make(chan error, 1)}
		r.started <- s
		<-ctx.Done()
		r.running.Add(-1)
		s.ended <- context.Cause(ctx)
		return nil
	}
}

func (r *jobRecorder) next(t *testing.T, what string) session {
	t.Helper()
	select {
	case s := <-r.started:
		return s
	case <-time.After(waitFor):
		t.Fatalf("no session started: %s", what)
		return session{}
	}
}

func ended(t *testing.T, s session) error {
	t.Helper()
	select {
	case err := <-s.ended:
		return err
	case <-time.After(waitFor):
		t.Fatalf("%s's session did not end", s.who)
		return nil
	}
}

// TestLeader_OneRunsAtATimeAndTakesOver: of two instances running one Leader, one runs the job;
// when it stops (released) the other takes over with a larger fence; when the lease is deleted
// under the holder its job's context ends with ErrLost and the lease is taken again; when Run
// stops the lease is free. On the memory store and on Redis.
func TestLeader_OneRunsAtATimeAndTakesOver(t *testing.T) {
	for name, store := range map[string]func(t *testing.T) lease.Store{
		"Memory": func(*testing.T) lease.Store { return lease.NewMemory(nil) },
		"Redis": func(t *testing.T) lease.Store {
			s, err := lease.NewRedis(redistest.SharedStandalone(t).Client(t), lease.RedisOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := store(t)
			// A TTL long enough that renewals every TTL/3 keep the lease on a loaded machine;
			// Retry short, so that a takeover after a release is quick.
			l := lease.Leader{Store: s, Keys: newKeys(), TTL: 2 * time.Second, Retry: 10 * time.Millisecond}
			rec := &jobRecorder{t: t, started: make(chan session, 4)}
			run := func(who string) (stop func()) {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- l.Run(ctx, rec.job(who)) }()
				return sync.OnceFunc(func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("%s: Run = %v", who, err)
					}
				})
			}
			stopA := run("a")
			first := rec.next(t, "a to lead")
			stopB := run("b")
			defer stopB()

			stopA()
			if cause := ended(t, first); !errors.Is(cause, context.Canceled) {
				t.Fatalf("a's job ended with %v; want its Run stopped", cause)
			}
			second := rec.next(t, "b to take over")
			if second.who != "b" || second.grant.Fence <= first.grant.Fence {
				t.Fatalf("took over: %s with fence %d after a's %d; want b with a larger fence", second.who, second.grant.Fence, first.grant.Fence)
			}

			if held, err := s.Release(context.Background(), l.Keys, second.grant.Token); err != nil || !held {
				t.Fatalf("delete the lease under b = %v, %v", held, err)
			}
			if cause := ended(t, second); !errors.Is(cause, lease.ErrLost) {
				t.Fatalf("b's job ended with %v after its lease was deleted; want ErrLost", cause)
			}
			third := rec.next(t, "b to lead again")
			if third.grant.Fence <= second.grant.Fence {
				t.Fatalf("fence %d after %d", third.grant.Fence, second.grant.Fence)
			}
			stopB()
			if holder, err := s.Holder(context.Background(), l.Keys); err != nil || holder != "" {
				t.Fatalf("holder after Run stopped = %q, %v; want the lease released", holder, err)
			}
		})
	}
}

// failingRenewals is a store whose renewals fail as with Redis unreachable.
type failingRenewals struct{ lease.Store }

func (failingRenewals) Renew(context.Context, lease.Keys, string, time.Duration) (bool, error) {
	return false, redstate.Errorf(redstate.EUNAVAILABLE, "Redis is unavailable")
}

// TestLeader_HoldLosesTheLeaseWhenRenewalsFailUntilItExpires: renewals that fail (not refused)
// end the held context with ErrLost once the lease's local expiry passed, not at the first
// failure; stop then releases it.
func TestLeader_HoldLosesTheLeaseWhenRenewalsFailUntilItExpires(t *testing.T) {
	mem := lease.NewMemory(nil)
	l := lease.Leader{Store: failingRenewals{mem}, Keys: newKeys(), TTL: 200 * time.Millisecond, Renew: 20 * time.Millisecond}
	g, ok, err := l.Acquire(context.Background())
	if err != nil || !ok {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
	held, stop := l.Hold(context.Background(), g)
	select {
	case <-held.Done():
	case <-time.After(waitFor):
		t.Fatal("the held context did not end")
	}
	if now := time.Now(); now.Before(g.Sent.Add(l.TTL)) {
		t.Fatalf("lost %s after the acquisition, before the lease's TTL %s", now.Sub(g.Sent), l.TTL)
	}
	if cause := context.Cause(held); !errors.Is(cause, lease.ErrLost) || !redstate.IsCode(cause, redstate.EUNAVAILABLE) {
		t.Fatalf("cause = %v; want ErrLost wrapping the renewal's EUNAVAILABLE", cause)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("second stop = %v", err)
	}
	if holder, _ := mem.Holder(context.Background(), l.Keys); holder != "" {
		t.Fatalf("holder after stop = %q; want released", holder)
	}
}

// TestLeader_HoldKeepsTheLeasePastItsTTL: Hold renews, so the lease outlives its TTL; stop
// releases it.
func TestLeader_HoldKeepsTheLeasePastItsTTL(t *testing.T) {
	mem := lease.NewMemory(nil)
	l := lease.Leader{Store: mem, Keys: newKeys(), TTL: time.Second, Renew: 50 * time.Millisecond}
	g, ok, err := l.Acquire(context.Background())
	if err != nil || !ok {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
	held, stop := l.Hold(context.Background(), g)
	time.Sleep(2 * l.TTL) // the condition here is elapsed time: the lease must outlive its TTL
	if held.Err() != nil {
		t.Fatalf("lost while renewing: %v", context.Cause(held))
	}
	if holder, _ := mem.Holder(context.Background(), l.Keys); holder != g.Token {
		t.Fatalf("holder = %q after 2 TTLs of renewals; want %q", holder, g.Token)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if holder, _ := mem.Holder(context.Background(), l.Keys); holder != "" {
		t.Fatalf("holder after stop = %q", holder)
	}
}

// TestLeader_Invalid: a leader without a store, TTL or valid keys refuses to run.
func TestLeader_Invalid(t *testing.T) {
	mem := lease.NewMemory(nil)
	var wg sync.WaitGroup
	for _, l := range []lease.Leader{
		{Keys: newKeys(), TTL: time.Second},
		{Store: mem, Keys: newKeys()},
		{Store: mem, Keys: lease.Keys{Lease: "a"}, TTL: time.Second},
		{Store: mem, Keys: newKeys(), TTL: time.Second, Retry: -1},
	} {
		wg.Go(func() {
			if err := l.Run(context.Background(), func(context.Context, lease.Grant) error { return nil }); !redstate.IsCode(err, redstate.EINVALID) {
				t.Errorf("Run of %+v = %v; want EINVALID", l, err)
			}
		})
	}
	wg.Wait()
}
