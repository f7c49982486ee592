package periodic_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/periodic"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// waitFor bounds every wait for an event in these tests.
const waitFor = 20 * time.Second

// testLeaseTTL is short so that takeovers are quick; a renewal late on a loaded machine only
// causes an extra takeover, which the scheduler must survive too.
const testLeaseTTL = time.Second

// fakeClock is a Clock the test moves; it tells when the leader waits for a tick.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	changed chan struct{} // closed and replaced whenever waiters change
}

type waiter struct {
	at    time.Time
	ready chan struct{}
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Wait(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !c.now.Before(t) {
		c.mu.Unlock()
		return nil
	}
	w := waiter{at: t, ready: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.notify()
	c.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.waiters = slices.DeleteFunc(c.waiters, func(x waiter) bool { return x.ready == w.ready })
		c.notify()
		c.mu.Unlock()
		return ctx.Err()
	}
}

// notify wakes awaitWaiter (caller holds mu).
func (c *fakeClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// set moves the clock to t, waking the waits it reaches.
func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.waiters = slices.DeleteFunc(c.waiters, func(w waiter) bool {
		if !t.Before(w.at) {
			close(w.ready)
			return true
		}
		return false
	})
	c.notify()
}

// awaitWaiter blocks until someone waits for a time at or after t: the leader has handled
// every tick before t.
func (c *fakeClock) awaitWaiter(t *testing.T, at time.Time) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		c.mu.Lock()
		found := slices.ContainsFunc(c.waiters, func(w waiter) bool { return !w.at.Before(at) })
		changed := c.changed
		c.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no scheduler waits for %s", at.UTC())
		}
	}
}

// backend is the shared state of the instances of one test: what one Redis (or one process's
// memory) gives them.
type backend struct {
	broker queue.Broker
	store  periodic.Store
	leases lease.Store
	keys   periodic.Keys
}

func memoryBackend(*testing.T) backend {
	return backend{broker: memqueue.NewBroker(memqueue.Options{}), store: periodic.NewMemoryStore(), leases: lease.NewMemory(nil),
		keys: periodic.NewKeys(redstate.Prefix("", ""))}
}

func redisBackend(c redis.UniversalClient) func(t *testing.T) backend {
	return func(t *testing.T) backend {
		ns := uniqueNS()
		keys := periodic.NewKeys(redstate.Prefix(ns, ""))
		b, err := redisqueue.New(c, redisqueue.Options{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		leases, err := lease.NewRedis(c, lease.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return backend{broker: b, store: redisStore(t, c, keys), leases: leases, keys: keys}
	}
}

// killSwitch makes an instance dead: every store, lease and enqueue call fails from then on,
// as if its process was gone (its lease is not released and expires after its TTL).
type killSwitch struct{ dead atomic.Bool }

func (k *killSwitch) err() error {
	if k.dead.Load() {
		return redstate.Errorf(redstate.EUNAVAILABLE, "this instance is dead")
	}
	return nil
}

type killableStore struct {
	periodic.Store
	k *killSwitch
}

func (s killableStore) Init(ctx context.Context, name string, r periodic.Record) (periodic.Record, error) {
	if err := s.k.err(); err != nil {
		return periodic.Record{}, err
	}
	return s.Store.Init(ctx, name, r)
}

func (s killableStore) Begin(ctx context.Context, name string, at time.Time, fence int64, now time.Time) (periodic.Record, bool, error) {
	if err := s.k.err(); err != nil {
		return periodic.Record{}, false, err
	}
	return s.Store.Begin(ctx, name, at, fence, now)
}

func (s killableStore) Finish(ctx context.Context, name string, at time.Time, fence int64) error {
	if err := s.k.err(); err != nil {
		return err
	}
	return s.Store.Finish(ctx, name, at, fence)
}

type killableLeases struct {
	lease.Store
	k *killSwitch
}

func (l killableLeases) TryAcquire(ctx context.Context, keys lease.Keys, token string, ttl time.Duration) (int64, bool, error) {
	if err := l.k.err(); err != nil {
		return 0, false, err
	}
	return l.Store.TryAcquire(ctx, keys, token, ttl)
}

func (l killableLeases) Renew(ctx context.Context, keys lease.Keys, token string, ttl time.Duration) (bool, error) {
	if err := l.k.err(); err != nil {
		return false, err
	}
	return l.Store.Renew(ctx, keys, token, ttl)
}

func (l killableLeases) Release(ctx context.Context, keys lease.Keys, token string) (bool, error) {
	if err := l.k.err(); err != nil {
		return false, err
	}
	return l.Store.Release(ctx, keys, token)
}

// killableEnqueuer enqueues, then calls after with the job id (which may kill the instance).
type killableEnqueuer struct {
	periodic.Enqueuer
	k     *killSwitch
	after func(id string)
}

func (e killableEnqueuer) EnqueueOnce(ctx context.Context, q, id string, payload json.RawMessage) error {
	if err := e.k.err(); err != nil {
		return err
	}
	err := e.Enqueuer.EnqueueOnce(ctx, q, id, payload)
	if err == nil && e.after != nil {
		e.after(id)
	}
	return err
}

// randomIDs is an Enqueuer that ignores the tick's id (a fresh job id per call): the control
// showing what the per-tick id prevents.
type randomIDs struct{ periodic.BrokerEnqueuer }

func (r randomIDs) EnqueueOnce(ctx context.Context, q, _ string, payload json.RawMessage) error {
	return r.BrokerEnqueuer.EnqueueOnce(ctx, q, queue.NewJobID(), payload)
}

// instance is one running scheduler.
type instance struct {
	kill   *killSwitch
	cancel context.CancelFunc
	done   chan error
}

// stop cancels the instance and waits for its Run.
func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	select {
	case err := <-in.done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
}

const testQueue = "jobs"

// start runs a scheduler of entry (cron expr) on be with clock; enq wraps the enqueuer.
func start(t *testing.T, be backend, clock periodic.Clock, expr string, enq func(periodic.Enqueuer, *killSwitch) periodic.Enqueuer) *instance {
	t.Helper()
	sched, err := queue.ParseCron(expr, "")
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{kill: &killSwitch{}, done: make(chan error, 1)}
	var e periodic.Enqueuer = periodic.BrokerEnqueuer{Broker: be.broker}
	if enq != nil {
		e = enq(e, in.kill)
	}
	s, err := periodic.New(periodic.Options{
		Entries: []periodic.Entry{{Name: "tick", Schedule: sched, Queue: testQueue, Payload: json.RawMessage(`{"report":"daily"}`)}},
		Store:   killableStore{be.store, in.kill}, Leases: killableLeases{be.leases, in.kill}, Keys: be.keys,
		Enqueuer: e, LeaseTTL: testLeaseTTL, RetryDelay: 10 * time.Millisecond, Clock: clock,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() { in.done <- s.Run(ctx) }()
	t.Cleanup(cancel)
	return in
}

// jobIDs returns the job ids on the test queue, in no particular order.
func jobIDs(t *testing.T, b queue.Broker) []string {
	t.Helper()
	var ids []string
	if _, err := b.HasJob(context.Background(), testQueue, func(m queue.Message) bool {
		ids = append(ids, m.JobID)
		return false
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// tickIDs returns the job ids of the minute ticks from..to (inclusive), sorted.
func tickIDs(from, to time.Time) []string {
	var ids []string
	for at := from; !at.After(to); at = at.Add(time.Minute) {
		ids = append(ids, periodic.TickID("tick", at))
	}
	slices.Sort(ids)
	return ids
}

// t0 is a minute boundary: the tests' clocks start 10 s after it.
var t0 = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

func onBackends(t *testing.T, f func(t *testing.T, nb func(*testing.T) backend)) {
	t.Run("Memory", func(t *testing.T) { f(t, memoryBackend) })
	redistest.RunOnTopologies(t, func(t *testing.T, c redis.UniversalClient) { f(t, redisBackend(c)) })
}

// TestScheduler_OneTickOneJob: one scheduler, a minute schedule: each tick the clock reaches
// is one job with the tick's id and the entry's payload; nothing fires at start (the first
// tick is the one after the scheduler first saw the entry).
func TestScheduler_OneTickOneJob(t *testing.T) {
	onBackends(t, func(t *testing.T, nb func(*testing.T) backend) {
		be := nb(t)
		clock := newFakeClock(t0.Add(10 * time.Second))
		in := start(t, be, clock, "* * * * *", nil)
		clock.awaitWaiter(t, t0.Add(time.Minute))
		if ids := jobIDs(t, be.broker); len(ids) != 0 {
			t.Fatalf("jobs at start: %v", ids)
		}
		clock.set(t0.Add(time.Minute))
		clock.awaitWaiter(t, t0.Add(2*time.Minute))
		in.stop(t)
		if ids, want := jobIDs(t, be.broker), tickIDs(t0.Add(time.Minute), t0.Add(time.Minute)); !slices.Equal(ids, want) {
			t.Fatalf("jobs %v; want %v", ids, want)
		}
		var payload json.RawMessage
		_, _ = be.broker.HasJob(context.Background(), testQueue, func(m queue.Message) bool { payload = m.Payload; return true })
		if string(payload) != `{"report":"daily"}` {
			t.Fatalf("payload %s", payload)
		}
		id := periodic.TickID("tick", t0.Add(time.Minute))
		job, err := be.broker.Job(context.Background(), testQueue, id)
		if err != nil || job.ID != id || job.State != queue.StatePending || job.Retention != queue.DefaultRetention {
			t.Fatalf("record of the tick's job = %+v, %v; want pending, kept %s", job, err, queue.DefaultRetention)
		}
	})
}

// TestBrokerEnqueuer_OneJobPerIDWhileItsRecordExists: a repeat of a tick's enqueue is the same
// job, also after the job finished (its record is kept for Retention, the Window).
func TestBrokerEnqueuer_OneJobPerIDWhileItsRecordExists(t *testing.T) {
	onBackends(t, func(t *testing.T, nb func(*testing.T) backend) {
		be := nb(t)
		ctx := context.Background()
		e := periodic.BrokerEnqueuer{Broker: be.broker, Retention: time.Hour}
		if e.Window() != time.Hour || (periodic.BrokerEnqueuer{}).Window() != queue.DefaultRetention {
			t.Fatalf("Window %s, default %s", e.Window(), periodic.BrokerEnqueuer{}.Window())
		}
		id := periodic.TickID("tick", t0)
		if err := e.EnqueueOnce(ctx, testQueue, id, json.RawMessage(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := be.broker.Heartbeat(ctx, testQueue, "c1", time.Minute); err != nil {
			t.Fatal(err)
		}
		ds, err := be.broker.DequeueBatch(ctx, testQueue, "c1", 10, time.Second)
		if err != nil || len(ds) != 1 {
			t.Fatalf("dequeue = %d, %v", len(ds), err)
		}
		if _, err := be.broker.StartJob(ctx, ds[0]); err != nil {
			t.Fatal(err)
		}
		if err := be.broker.Ack(ctx, ds[0]); err != nil {
			t.Fatal(err)
		}
		if err := e.EnqueueOnce(ctx, testQueue, id, json.RawMessage(`{"n":2}`)); err != nil {
			t.Fatal(err)
		}
		if ids := jobIDs(t, be.broker); len(ids) != 0 {
			t.Fatalf("a repeat after the job finished enqueued %v", ids)
		}
		job, err := be.broker.Job(ctx, testQueue, id)
		if err != nil || job.State != queue.StateDone || job.Retention != time.Hour || string(job.Message.Payload) != `{"n":1}` {
			t.Fatalf("record = %+v, %v; want the first job, done, kept 1h", job, err)
		}
	})
}

// TestNew_RefusesANameTooLongForItsTickIDs: an entry whose ticks' job ids would exceed
// queue.MaxJobIDLen is refused at New, not at every tick.
func TestNew_RefusesANameTooLongForItsTickIDs(t *testing.T) {
	sched, err := queue.ParseCron("* * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	be := memoryBackend(t)
	longest := queue.MaxJobIDLen - len("cron::253402300799")
	for _, c := range []struct {
		name string
		ok   bool
	}{{strings.Repeat("n", longest), true}, {strings.Repeat("n", longest+1), false}} {
		_, err := periodic.New(periodic.Options{Entries: []periodic.Entry{{Name: c.name, Schedule: sched, Queue: testQueue}},
			Store: be.store, Leases: be.leases, Keys: be.keys, Enqueuer: periodic.BrokerEnqueuer{Broker: be.broker}})
		if (err == nil) != c.ok || (err != nil && !redstate.IsCode(err, redstate.EINVALID)) {
			t.Fatalf("name of %d characters: New = %v; want ok=%v", len(c.name), err, c.ok)
		}
	}
}

// TestScheduler_ThreeInstancesEachTickOnce: three schedulers on one backend, 10 ticks: each
// tick is exactly one job, whichever instance led it.
func TestScheduler_ThreeInstancesEachTickOnce(t *testing.T) {
	onBackends(t, func(t *testing.T, nb func(*testing.T) backend) {
		be := nb(t)
		clock := newFakeClock(t0.Add(10 * time.Second))
		var ins []*instance
		for range 3 {
			ins = append(ins, start(t, be, clock, "* * * * *", nil))
		}
		clock.awaitWaiter(t, t0.Add(time.Minute))
		const ticks = 10
		for i := 1; i <= ticks; i++ {
			clock.set(t0.Add(time.Duration(i) * time.Minute))
			clock.awaitWaiter(t, t0.Add(time.Duration(i+1)*time.Minute))
		}
		for _, in := range ins {
			in.stop(t)
		}
		if ids, want := jobIDs(t, be.broker), tickIDs(t0.Add(time.Minute), t0.Add(ticks*time.Minute)); !slices.Equal(ids, want) {
			t.Fatalf("jobs %v; want one per tick: %v", ids, want)
		}
	})
}

// TestScheduler_LeaderKilledMidTick: of three instances, the one that enqueues the first
// tick dies right after the enqueue, before recording it done, without releasing its lease.
// Another takes over after the lease TTL, re-fires that tick under the same id (one job), and
// fires the next ticks: every tick exactly one job. The control without per-tick ids shows
// the test sees the duplicate the re-fire would make.
func TestScheduler_LeaderKilledMidTick(t *testing.T) {
	onBackends(t, func(t *testing.T, nb func(*testing.T) backend) {
		for _, c := range []struct {
			name string
			ids  func(periodic.Enqueuer) periodic.Enqueuer
			jobs int
		}{
			{"TickIDs", func(e periodic.Enqueuer) periodic.Enqueuer { return e }, 3},
			{"ControlRandomIDs", func(e periodic.Enqueuer) periodic.Enqueuer {
				return randomIDs{e.(periodic.BrokerEnqueuer)}
			}, 4},
		} {
			t.Run(c.name, func(t *testing.T) {
				be := nb(t)
				clock := newFakeClock(t0.Add(10 * time.Second))
				var killed atomic.Pointer[instance]
				killedNow := make(chan struct{})
				var ins []*instance
				for range 3 {
					var self *instance
					self = start(t, be, clock, "* * * * *", func(e periodic.Enqueuer, k *killSwitch) periodic.Enqueuer {
						return killableEnqueuer{Enqueuer: c.ids(e), k: k, after: func(string) {
							if killed.CompareAndSwap(nil, self) {
								k.dead.Store(true)
								close(killedNow)
							}
						}}
					})
					ins = append(ins, self)
				}
				clock.awaitWaiter(t, t0.Add(time.Minute))
				clock.set(t0.Add(time.Minute))
				select {
				case <-killedNow:
				case <-time.After(waitFor):
					t.Fatal("no instance enqueued the first tick")
				}
				dead := killed.Load()
				dead.stop(t)
				clock.awaitWaiter(t, t0.Add(2*time.Minute)) // a survivor took over and handled the tick
				for i := 2; i <= 3; i++ {
					clock.set(t0.Add(time.Duration(i) * time.Minute))
					clock.awaitWaiter(t, t0.Add(time.Duration(i+1)*time.Minute))
				}
				for _, in := range ins {
					if in != dead {
						in.stop(t)
					}
				}
				ids := jobIDs(t, be.broker)
				if len(ids) != c.jobs {
					t.Fatalf("%d jobs for 3 ticks: %v; want %d", len(ids), ids, c.jobs)
				}
				if want := tickIDs(t0.Add(time.Minute), t0.Add(3*time.Minute)); c.jobs == 3 && !slices.Equal(ids, want) {
					t.Fatalf("jobs %v; want %v", ids, want)
				}
				r, err := be.store.Init(context.Background(), "tick", periodic.Record{})
				if err != nil || !r.Done || !r.At.Equal(t0.Add(3*time.Minute)) {
					t.Fatalf("record after the takeover = %+v, %v; want the third tick done", r, err)
				}
			})
		}
	})
}

// TestScheduler_CatchUpFiresOnlyTheLatestMissedTick: while no instance runs, five ticks pass;
// the next leader fires the latest of them only, then the following ticks as usual.
func TestScheduler_CatchUpFiresOnlyTheLatestMissedTick(t *testing.T) {
	onBackends(t, func(t *testing.T, nb func(*testing.T) backend) {
		be := nb(t)
		clock := newFakeClock(t0.Add(10 * time.Second))
		first := start(t, be, clock, "* * * * *", nil)
		clock.awaitWaiter(t, t0.Add(time.Minute))
		first.stop(t)
		clock.set(t0.Add(5*time.Minute + 30*time.Second))
		second := start(t, be, clock, "* * * * *", nil)
		clock.awaitWaiter(t, t0.Add(6*time.Minute))
		clock.set(t0.Add(6 * time.Minute))
		clock.awaitWaiter(t, t0.Add(7*time.Minute))
		second.stop(t)
		want := append(tickIDs(t0.Add(5*time.Minute), t0.Add(5*time.Minute)), tickIDs(t0.Add(6*time.Minute), t0.Add(6*time.Minute))...)
		if ids := jobIDs(t, be.broker); !slices.Equal(ids, want) {
			t.Fatalf("jobs %v; want the latest missed tick and the next: %v", ids, want)
		}
	})
}

// dieBeforeEnqueue is an Enqueuer whose first call (across the instances sharing once) kills
// its instance before anything reaches the queue: the tick is claimed, not enqueued.
type dieBeforeEnqueue struct {
	periodic.Enqueuer
	k    *killSwitch
	once *atomic.Bool
	died chan struct{}
}

func (e dieBeforeEnqueue) EnqueueOnce(ctx context.Context, q, id string, payload json.RawMessage) error {
	if e.once.CompareAndSwap(false, true) {
		e.k.dead.Store(true)
		close(e.died)
	}
	if err := e.k.err(); err != nil {
		return err
	}
	return e.Enqueuer.EnqueueOnce(ctx, q, id, payload)
}

// TestScheduler_TakeoverRefiresAClaimedTickEvenWhenALaterOneIsDue: the leader dies after
// claiming a tick and before its enqueue; by the time another instance takes over, the next
// tick is due too. The new leader fires the claimed tick under its id and then the latest
// (catch-up): both ticks are one job each, none is lost.
func TestScheduler_TakeoverRefiresAClaimedTickEvenWhenALaterOneIsDue(t *testing.T) {
	onBackends(t, func(t *testing.T, nb func(*testing.T) backend) {
		be := nb(t)
		clock := newFakeClock(t0.Add(10 * time.Second))
		var once atomic.Bool
		died := make(chan struct{})
		var ins []*instance
		for range 2 {
			ins = append(ins, start(t, be, clock, "* * * * *", func(e periodic.Enqueuer, k *killSwitch) periodic.Enqueuer {
				return dieBeforeEnqueue{Enqueuer: e, k: k, once: &once, died: died}
			}))
		}
		clock.awaitWaiter(t, t0.Add(time.Minute))
		clock.set(t0.Add(time.Minute))
		select {
		case <-died:
		case <-time.After(waitFor):
			t.Fatal("no instance tried to enqueue the first tick")
		}
		var survivor *instance
		for _, in := range ins {
			if in.kill.dead.Load() {
				in.stop(t)
			} else {
				survivor = in
			}
		}
		clock.set(t0.Add(2*time.Minute + 30*time.Second))
		clock.awaitWaiter(t, t0.Add(3*time.Minute))
		survivor.stop(t)
		if ids, want := jobIDs(t, be.broker), tickIDs(t0.Add(time.Minute), t0.Add(2*time.Minute)); !slices.Equal(ids, want) {
			t.Fatalf("jobs %v; want the claimed tick and the latest: %v", ids, want)
		}
	})
}
