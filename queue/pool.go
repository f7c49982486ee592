package queue

import (
	"cmp"
	"log/slog"
	"slices"
	"time"

	"github.com/redstate/redstate"
)

// DefaultPoolBlockTimeout is how long a pool whose queues are all empty blocks on its first
// queue before it looks at the others again (PoolSettings.BlockTimeout).
const DefaultPoolBlockTimeout = time.Second

// PoolSettings configures a Worker that serves several queues with one budget of handlers
// (NewPool). Zero fields take the defaults stated on them.
type PoolSettings struct {
	// Name names the pool in logs (optional).
	Name string
	// ConsumerID names the pool's consumer on each of its queues (its in-flight list and lease
	// there). Default "<hostname>-<pid>-<random>".
	ConsumerID string
	// Concurrency is how many jobs of all the queues run at once. Default 1.
	Concurrency int
	// Prefetch is how many jobs the pool may hold dequeued beyond the running ones (as
	// WorkerSettings.Prefetch). Priorities apply when jobs are dequeued, so a job of a higher
	// queue that arrives later starts after the prefetched ones: set NoPrefetch for priorities
	// at every start. Default Concurrency.
	Prefetch int
	// NoPrefetch, when true, disables prefetching (Prefetch is ignored).
	NoPrefetch bool
	// Strict picks the highest-priority queue (the greatest Weight) that has a job, always: a
	// lower queue runs only while every higher one is empty. Otherwise the queues share the
	// dequeued jobs in proportion to their weights (a queue with nothing pending leaves its
	// share to the others).
	Strict bool
	// BlockTimeout is how long the pool, finding every queue empty, blocks on its first queue
	// (the heaviest, or the highest priority) before it asks all of them again: a job arriving
	// on that queue is taken at once, one on another queue within about BlockTimeout. Default
	// DefaultPoolBlockTimeout.
	BlockTimeout time.Duration
	// ShutdownTimeout is how long running handlers may continue after Run's ctx is canceled
	// before their own ctx is canceled. Default 1m.
	ShutdownTimeout time.Duration
	// Logger receives the pool's logs, and its queues' unless they have their own. Default
	// slog.Default().
	Logger *slog.Logger
}

// PoolQueue is one queue of a pool: its settings, handler and weight.
type PoolQueue struct {
	// Settings are the queue's worker settings: Queue, the retries, Lease, ErrorDelay,
	// BlockTimeout (of settle calls here), PromoteInterval, Logger, Observer, Now, Check and
	// OnDead. ConsumerID, Concurrency, Prefetch, NoPrefetch and ShutdownTimeout are the pool's
	// and must be left zero.
	Settings WorkerSettings
	// Handler runs the queue's jobs.
	Handler Handler
	// Weight (at least 1) is the queue's share of a weighted pool (weights 6 and 1: six jobs of
	// the first for one of the second while both have jobs), or its priority in a strict one
	// (greater first; the weights of a strict pool's queues must differ).
	Weight int
}

// PoolQueueSettings are the effective settings of one queue of a Worker (QueueSettings).
type PoolQueueSettings struct {
	// Settings are the queue's settings, defaults applied, with the pool's consumer id,
	// concurrency and prefetch.
	Settings WorkerSettings
	// Weight is the queue's weight or priority (1 for a Worker of one queue).
	Weight int
}

// withDefaults returns p with every zero field set to its default.
func (p PoolSettings) withDefaults() PoolSettings {
	if p.ConsumerID == "" {
		p.ConsumerID = DefaultConsumerID()
	}
	if p.Concurrency == 0 {
		p.Concurrency = DefaultConcurrency
	}
	if p.NoPrefetch {
		p.Prefetch = 0
	} else if p.Prefetch == 0 {
		p.Prefetch = p.Concurrency
	}
	if p.BlockTimeout == 0 {
		p.BlockTimeout = DefaultPoolBlockTimeout
	}
	if p.ShutdownTimeout == 0 {
		p.ShutdownTimeout = DefaultShutdownTimeout
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	return p
}

// NewPool returns a Worker serving queues with one budget of cfg.Concurrency handlers, weighted
// or strict (cfg.Strict) between them (docs/queue.md, "Priorities"). Each queue keeps its own
// handler, retries, lease, pause, dead letters and metrics, exactly as a Worker of that queue
// alone. Errors: EINVALID (nil broker, no queue, a nil handler, a weight below 1, a queue named
// twice, equal weights in a strict pool, a pool-wide setting set on a queue, bad settings).
func NewPool(b Broker, cfg PoolSettings, queues ...PoolQueue) (*Worker, error) {
	if b == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "queue pool: a broker is required")
	}
	if len(queues) == 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "queue pool: no queue")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lanes := make([]*lane, 0, len(queues))
	seen := map[string]bool{}
	weights := map[int]string{}
	for _, pq := range queues {
		s := pq.Settings
		switch {
		case pq.Handler == nil:
			return nil, redstate.Errorf(redstate.EINVALID, "queue pool: queue %q has no handler", s.Queue)
		case pq.Weight < 1:
			return nil, redstate.Errorf(redstate.EINVALID, "queue pool: queue %q has weight %d; it must be at least 1", s.Queue, pq.Weight)
		case seen[s.Queue]:
			return nil, redstate.Errorf(redstate.EINVALID, "queue pool: queue %q is given twice", s.Queue)
		case s.ConsumerID != "" || s.Concurrency != 0 || s.Prefetch != 0 || s.NoPrefetch || s.ShutdownTimeout != 0:
			return nil, redstate.Errorf(redstate.EINVALID,
				"queue pool: queue %q sets a pool-wide setting (ConsumerID, Concurrency, Prefetch, NoPrefetch, ShutdownTimeout); set it on the pool", s.Queue)
		}
		if other, dup := weights[pq.Weight]; dup && cfg.Strict {
			return nil, redstate.Errorf(redstate.EINVALID, "queue pool: queues %q and %q have the same priority %d in a strict pool", other, s.Queue, pq.Weight)
		}
		seen[s.Queue], weights[pq.Weight] = true, s.Queue
		s.ConsumerID, s.Concurrency, s.Prefetch, s.NoPrefetch, s.ShutdownTimeout = cfg.ConsumerID, cfg.Concurrency, cfg.Prefetch, cfg.Prefetch == 0, cfg.ShutdownTimeout
		if s.Logger == nil {
			s.Logger = cfg.Logger
		}
		s = s.withDefaults()
		if err := s.validate(); err != nil {
			return nil, err
		}
		lanes = append(lanes, newLane(b, pq.Handler, s, pq.Weight))
	}
	slices.SortStableFunc(lanes, func(a, b *lane) int { return cmp.Compare(b.weight, a.weight) })
	names := make([]string, len(lanes))
	for i, l := range lanes {
		names[i] = l.cfg.Queue
	}
	log := cfg.Logger.With("pool", cfg.Name, "queues", names, "consumer", cfg.ConsumerID)
	return newWorker(b, cfg, lanes, log), nil
}

// validate checks defaulted pool settings. Errors: EINVALID.
func (p PoolSettings) validate() error {
	if err := ValidateConsumerID(p.ConsumerID); err != nil {
		return err
	}
	switch {
	case p.Concurrency < 1:
		return redstate.Errorf(redstate.EINVALID, "queue pool: Concurrency must be >= 1, got %d", p.Concurrency)
	case p.Prefetch < 0:
		return redstate.Errorf(redstate.EINVALID, "queue pool: Prefetch must be >= 0, got %d", p.Prefetch)
	case p.BlockTimeout < 0, p.ShutdownTimeout < 0:
		return redstate.Errorf(redstate.EINVALID, "queue pool: durations must be positive")
	}
	return nil
}
