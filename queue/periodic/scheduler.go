package periodic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/queue"
)

// DefaultLeaseTTL is the scheduler lease's default TTL: how long after a leader dies (without
// releasing) another instance takes over.
const DefaultLeaseTTL = 10 * time.Second

// DefaultRetryDelay is the default wait before a tick whose claim or enqueue failed is tried
// again.
const DefaultRetryDelay = time.Second

// Options configure a Scheduler.
type Options struct {
	// Entries are the periodic jobs; names must be unique.
	Entries []Entry
	// Store keeps the entries' tick records (RedisStore, or MemoryStore in one process).
	Store Store
	// Leases holds the scheduler's lease (lease.NewRedis, or lease.NewMemory in one process).
	Leases lease.Store
	// Keys name the lease (Keys.LeaseKeys); the store's key is the store's own.
	Keys Keys
	// Enqueuer enqueues the ticks' jobs.
	Enqueuer Enqueuer
	// LeaseTTL is the lease's TTL (DefaultLeaseTTL when zero); at most a third of the
	// Enqueuer's Window, so that a takeover re-fires within the window (see RefireWithin).
	LeaseTTL time.Duration
	// RetryDelay is the wait before a failed claim or enqueue is tried again
	// (DefaultRetryDelay when zero).
	RetryDelay time.Duration
	// Clock tells the time and wakes the scheduler (RealClock when nil).
	Clock Clock
	// Logger receives the scheduler's logs (slog.Default when nil).
	Logger *slog.Logger
}

// Scheduler fires the entries' ticks on the instance that holds its lease. Every instance
// runs one with the same Keys and stores.
type Scheduler struct {
	o      Options
	leader lease.Leader
}

// New returns a Scheduler. Errors: EINVALID (no store, lease store or enqueuer; bad or
// duplicate entry; an entry name too long for its ticks' job ids; bad keys; a lease TTL above a third of the enqueuer's window).
func New(o Options) (*Scheduler, error) {
	if o.Store == nil || o.Leases == nil || o.Enqueuer == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "periodic: the scheduler needs a tick store, a lease store and an enqueuer")
	}
	o.LeaseTTL = cmpOr(o.LeaseTTL, DefaultLeaseTTL)
	o.RetryDelay = cmpOr(o.RetryDelay, DefaultRetryDelay)
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if w := o.Enqueuer.Window(); o.LeaseTTL < 0 || o.RetryDelay < 0 || 3*o.LeaseTTL > w {
		return nil, redstate.Errorf(redstate.EINVALID, "periodic: the lease TTL (%s) must be positive and at most a third of the enqueuer's window (%s), the retry delay (%s) positive", o.LeaseTTL, w, o.RetryDelay)
	}
	names := map[string]bool{}
	for _, e := range o.Entries {
		if err := queue.ValidateQueueName(e.Name); err != nil {
			return nil, redstate.Wrap(redstate.EINVALID, err, "periodic entry name")
		}
		if err := queue.ValidateQueueName(e.Queue); err != nil {
			return nil, redstate.Wrap(redstate.EINVALID, err, "periodic entry "+e.Name)
		}
		if err := queue.ValidateJobID(TickID(e.Name, lastRepresentableTick)); err != nil {
			return nil, redstate.Wrap(redstate.EINVALID, err, "periodic entry "+e.Name+": its name is too long for its ticks' job ids")
		}
		if e.Schedule == nil || names[e.Name] {
			return nil, redstate.Errorf(redstate.EINVALID, "periodic entry %q: a schedule is required and names must be unique", e.Name)
		}
		names[e.Name] = true
	}
	s := &Scheduler{o: o}
	s.leader = lease.Leader{Store: o.Leases, Keys: o.Keys.LeaseKeys(), TTL: o.LeaseTTL, OnError: func(err error) {
		o.Logger.Warn("periodic scheduler lease", "err", err)
	}}
	if err := s.leader.Keys.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// lastRepresentableTick is the latest tick New plans for (the end of year 9999): its job id
// is the longest an entry makes.
var lastRepresentableTick = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// RefireWithin is how long after a tick was first claimed a new leader still re-fires it when
// its predecessor did not record it done: the Enqueuer's Window less the lease TTL. A re-fire
// lands at most that long after the first enqueue was sent, and the first enqueue at most a
// lease TTL after the claim (its deadline), so both fall within the window, with a lease TTL
// of margin for the instances' clocks.
func (s *Scheduler) RefireWithin() time.Duration { return s.o.Enqueuer.Window() - s.o.LeaseTTL }

// Run fires ticks whenever this instance leads, until ctx ends; it returns nil then. Without
// entries it returns at once.
func (s *Scheduler) Run(ctx context.Context) error {
	if len(s.o.Entries) == 0 {
		return nil
	}
	return s.leader.Run(ctx, s.lead)
}

// lead fires the entries' ticks while g holds the lease (ctx ends when it is lost). It
// returns an ErrStale when a newer leader wrote a tick record.
func (s *Scheduler) lead(ctx context.Context, g lease.Grant) error {
	log := s.o.Logger.With("fence", g.Fence)
	log.Info("periodic scheduler leading", "entries", len(s.o.Entries))
	last := make(map[string]time.Time, len(s.o.Entries))
	for _, e := range s.o.Entries {
		for {
			at, err := s.takeOver(ctx, e, g.Fence, log)
			if err == nil {
				last[e.Name] = at
				break
			}
			if errors.Is(err, ErrStale) || s.o.Clock.Wait(ctx, s.o.Clock.Now().Add(s.o.RetryDelay)) != nil {
				return err
			}
			log.Warn("periodic tick record unreadable; retrying", "entry", e.Name, "err", err)
		}
	}
	for {
		var next time.Time
		for _, e := range s.o.Entries {
			if n := nextTick(e.Schedule, last[e.Name]); !n.IsZero() && (next.IsZero() || n.Before(next)) {
				next = n
			}
		}
		if next.IsZero() {
			<-ctx.Done()
			return nil
		}
		if s.o.Clock.Wait(ctx, next) != nil {
			return nil
		}
		now := s.o.Clock.Now()
		failed := false
		for _, e := range s.o.Entries {
			if n := nextTick(e.Schedule, last[e.Name]); n.IsZero() || n.After(now) {
				continue
			}
			due := lastTick(e.Schedule, now)
			if skipped := nextTick(e.Schedule, last[e.Name]); skipped.Before(due) {
				log.Warn("periodic ticks missed while no instance led; firing only the latest", "entry", e.Name,
					"first_missed", skipped.UTC(), "firing", due.UTC())
			}
			at, err := s.fire(ctx, e, due, g.Fence, log)
			switch {
			case errors.Is(err, ErrStale):
				return err
			case err != nil:
				failed = true
				if ctx.Err() == nil {
					log.Warn("periodic tick not fired; retrying", "entry", e.Name, "tick", due.UTC(), "err", err)
				}
			default:
				last[e.Name] = at
			}
		}
		if failed && s.o.Clock.Wait(ctx, now.Add(s.o.RetryDelay)) != nil {
			return nil
		}
	}
}

// takeOver reads entry e's record as a new leader with fence and returns the tick it takes as
// handled: a new entry's record starts at its latest tick (a new entry fires from its next
// one); a tick the previous leader claimed but did not finish is fired again under its id if
// it was claimed less than RefireWithin ago (also when a later tick is due: the catch-up then
// fires the latest as well), else left (fired or lost).
func (s *Scheduler) takeOver(ctx context.Context, e Entry, fence int64, log *slog.Logger) (time.Time, error) {
	now := s.o.Clock.Now()
	latest := lastTick(e.Schedule, now)
	if latest.IsZero() {
		latest = now.Truncate(time.Second)
	}
	r, err := s.o.Store.Init(ctx, e.Name, Record{At: latest, Fence: fence, Done: true, Claimed: now})
	switch {
	case err != nil:
		return time.Time{}, err
	case r.Fence > fence:
		return time.Time{}, fmt.Errorf("%w (fence %d above this leader's %d)", ErrStale, r.Fence, fence)
	case r.Done:
		return r.At, nil
	case now.Sub(r.Claimed) >= s.RefireWithin():
		log.Error("periodic tick claimed by an earlier leader that did not record it enqueued, too long ago to repeat safely: not re-fired (it ran once or not at all)",
			"entry", e.Name, "tick", r.At.UTC(), "claimed", r.Claimed.UTC(), "job_id", TickID(e.Name, r.At))
		return r.At, nil
	}
	log.Info("periodic tick claimed by an earlier leader not recorded enqueued: re-firing it under its id", "entry", e.Name,
		"tick", r.At.UTC(), "job_id", TickID(e.Name, r.At))
	return s.fire(ctx, e, r.At, fence, log)
}

// fire fires tick at of e: Begin, the enqueue under TickID (with a deadline of one lease TTL),
// Finish. It returns the tick the record is at afterwards (at, or a later one another leader
// recorded). A tick first claimed RefireWithin ago or longer is not enqueued again.
func (s *Scheduler) fire(ctx context.Context, e Entry, at time.Time, fence int64, log *slog.Logger) (time.Time, error) {
	now := s.o.Clock.Now()
	r, begun, err := s.o.Store.Begin(ctx, e.Name, at, fence, now)
	if err != nil || !begun {
		return r.At, err
	}
	id := TickID(e.Name, at)
	if now.Sub(r.Claimed) >= s.RefireWithin() {
		log.Error("periodic tick's enqueue failed for too long to repeat safely: given up (it ran once or not at all)",
			"entry", e.Name, "tick", at.UTC(), "claimed", r.Claimed.UTC(), "job_id", id)
		return at, nil
	}
	ectx, cancel := context.WithTimeout(ctx, s.o.LeaseTTL)
	err = s.o.Enqueuer.EnqueueOnce(ectx, e.Queue, id, e.Payload)
	cancel()
	if err != nil {
		return time.Time{}, err
	}
	if err := s.o.Store.Finish(ctx, e.Name, at, fence); err != nil {
		if errors.Is(err, ErrStale) {
			return time.Time{}, err
		}
		log.Warn("periodic tick enqueued but not recorded done; a takeover may repeat it under its id", "entry", e.Name,
			"tick", at.UTC(), "job_id", id, "err", err)
	}
	log.Info("periodic job enqueued", "entry", e.Name, "queue", e.Queue, "tick", at.UTC(), "job_id", id)
	return at, nil
}
