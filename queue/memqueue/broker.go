// Package memqueue is the embedded, in-memory queue backend: a queue.Broker with the Redis
// backend's semantics, checked by the queuetest conformance suites. Nothing survives the process, so it suits tests, single-process deployments and
// development; crash safety across processes needs the Redis backend.
//
// Dequeue blocks on a per-queue broadcast channel (closed and replaced on every push), honoring
// its ctx and timeout; it never polls. Lease deadlines follow an injectable clock (Options.Now), so tests can expire leases without sleeping; blocking timeouts use real
// time.
package memqueue

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Options configure a Broker. The zero value is ready to use.
type Options struct {
	// Now is the clock for lease deadlines. Default time.Now.
	Now func() time.Time
}

// Broker is the in-memory queue.Broker. It is safe for concurrent use.
type Broker struct {
	now func() time.Time

	mu         sync.Mutex
	seq        uint64 // orders record transitions (Jobs)
	queues     map[string]*state
	throughput map[string]map[int64]map[string]int64 // queue → minute → outcome → jobs
}

var _ queue.Broker = (*Broker)(nil)

// state is one queue. Guarded by Broker.mu.
type state struct {
	pending  []string             // pending[0] is dequeued next (the Redis list's right end)
	inflight map[string][]string  // consumer id → its in-flight entries, in dequeue order
	leases   map[string]time.Time // consumer id → lease deadline
	retry    map[string]time.Time // encoded message → due time (a sorted set's semantics)
	dead     []string             // dead[0] is the newest dead letter
	notify   chan struct{}        // closed and replaced whenever pending grows
	enqueued recent               // job ids enqueued less than queue.DedupWindow ago
	batches  recent               // throughput batch ids added less than queue.DedupWindow ago

	scheduled map[string]time.Time // encoded message → due time (EnqueueJob with a delay)
	records   map[string]*record   // job id → record (EnqueueJob)
	uniques   map[string]unique    // unique key → lock
	paused    bool                 // Pause: DequeueBatch delivers nothing
}

// recent is a set of ids marked less than queue.DedupWindow ago.
type recent struct {
	until   map[string]time.Time // id → end of its window
	pruneAt int                  // size of until that triggers the next sweep of ended windows
}

// minPruneAt is the smallest size of recent.until that triggers a sweep.
const minPruneAt = 1024

// mark records id as marked at now and returns true, or returns false when it was marked less
// than queue.DedupWindow before now. Windows that ended are swept once the set has doubled
// since the last sweep.
func (r *recent) mark(id string, now time.Time) bool {
	if end, ok := r.until[id]; ok && now.Before(end) {
		return false
	}
	if r.until == nil {
		r.until, r.pruneAt = map[string]time.Time{}, minPruneAt
	}
	r.until[id] = now.Add(queue.DedupWindow)
	if len(r.until) >= r.pruneAt {
		for k, end := range r.until {
			if !now.Before(end) {
				delete(r.until, k)
			}
		}
		r.pruneAt = max(2*len(r.until), minPruneAt)
	}
	return true
}

// NewBroker returns an empty Broker.
func NewBroker(opts Options) *Broker {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Broker{now: opts.Now, queues: make(map[string]*state)}
}

// q returns the state of name, creating it. b.mu must be held.
func (b *Broker) q(name string) *state {
	s := b.queues[name]
	if s == nil {
		s = &state{
			inflight: make(map[string][]string),
			leases:   make(map[string]time.Time),
			retry:    make(map[string]time.Time),
			notify:   make(chan struct{}),

			scheduled: make(map[string]time.Time),
			records:   make(map[string]*record),
			uniques:   make(map[string]unique),
		}
		b.queues[name] = s
	}
	return s
}

// push appends raws to the tail of the pending list and wakes blocked consumers.
func (s *state) push(raws ...string) {
	if len(raws) == 0 {
		return
	}
	s.pending = append(s.pending, raws...)
	s.wake()
}

// pushFront puts raws, in order, at the head of the pending list and wakes blocked consumers.
func (s *state) pushFront(raws []string) {
	if len(raws) == 0 {
		return
	}
	s.pending = append(append(make([]string, 0, len(raws)+len(s.pending)), raws...), s.pending...)
	s.wake()
}

func (s *state) wake() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// Enqueue implements queue.Broker. A job id enqueued on the queue less than
// queue.DedupWindow ago (by Options.Now) is not appended again.
func (b *Broker) Enqueue(_ context.Context, name string, msg queue.Message) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(msg)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	if msg.JobID != "" && !s.enqueued.mark(msg.JobID, b.now()) {
		return nil
	}
	s.push(string(raw))
	return nil
}

// EnqueueRaw implements queue.Broker.
func (b *Broker) EnqueueRaw(_ context.Context, name, raw string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if raw == "" {
		return redstate.Errorf(redstate.EINVALID, "empty message")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.q(name).push(raw)
	return nil
}

// Dequeue implements queue.Broker.
func (b *Broker) Dequeue(ctx context.Context, name, consumerID string, timeout time.Duration) (*queue.Delivery, error) {
	return queue.DequeueOne(ctx, b, name, consumerID, timeout)
}

// DequeueBatch implements queue.Broker.
func (b *Broker) DequeueBatch(ctx context.Context, name, consumerID string, maxJobs int, timeout time.Duration) ([]*queue.Delivery, error) {
	if err := queue.CheckDequeueArgs(ctx, name, consumerID, maxJobs, timeout); err != nil {
		return nil, err
	}
	var timer *time.Timer
	for {
		b.mu.Lock()
		s := b.q(name)
		if deadline, ok := s.leases[consumerID]; !ok || !b.now().Before(deadline) {
			b.mu.Unlock()
			return nil, redstate.Errorf(redstate.ECONFLICT, "consumer %q holds no live lease on queue %q (heartbeat first)", consumerID, name)
		}
		if n := min(maxJobs, len(s.pending)); n > 0 && !s.paused {
			raws := make([]string, n)
			copy(raws, s.pending[:n])
			clear(s.pending[:n])
			s.pending = s.pending[n:]
			s.inflight[consumerID] = append(s.inflight[consumerID], raws...)
			b.mu.Unlock()
			ds := make([]*queue.Delivery, n)
			for i, raw := range raws {
				ds[i] = queue.NewDelivery(name, consumerID, raw)
			}
			return ds, nil
		}
		wake := s.notify
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(timeout)
			defer timer.Stop()
		}
		select {
		case <-wake:
			// Like the Redis backend's blocking BLMOVE, a wait ends with at most one job.
			maxJobs = 1
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, nil
		}
	}
}

// HasJob implements queue.Broker.
func (b *Broker) HasJob(_ context.Context, name string, want func(queue.Message) bool) (bool, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return false, err
	}
	if want == nil {
		return false, redstate.Errorf(redstate.EINVALID, "has job: no predicate")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	match := func(raw string) bool {
		m, err := queue.DecodeMessage([]byte(raw))
		return err == nil && want(m)
	}
	for _, raw := range s.pending {
		if match(raw) {
			return true, nil
		}
	}
	for _, list := range s.inflight {
		for _, raw := range list {
			if match(raw) {
				return true, nil
			}
		}
	}
	for raw := range s.retry {
		if match(raw) {
			return true, nil
		}
	}
	return false, nil
}

// Stats implements queue.Broker.
func (b *Broker) Stats(_ context.Context, name string) (queue.Stats, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return queue.Stats{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	st := queue.Stats{Pending: int64(len(s.pending)), Retrying: int64(len(s.retry)), Scheduled: int64(len(s.scheduled)), Dead: int64(len(s.dead))}
	for _, list := range s.inflight {
		st.Running += int64(len(list))
	}
	return st, nil
}

// sortedKeys returns m's keys in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
