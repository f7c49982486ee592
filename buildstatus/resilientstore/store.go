package resilientstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/internal/metrics"
	"github.com/redstate/redstate/internal/resilience"
)

// Store is the resilient buildstatus.Store. It is safe for concurrent use.
type Store struct {
	primary  buildstatus.Store
	mem      *memstore.Store
	fallback bool // policy is config.PolicyFallback
	br       *resilience.Breaker
	m        *metrics.Metrics
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	// mu guards pending and makes "apply to memory + mark pending" and "drop after write-back"
	// atomic with respect to each other. Memory-store calls made under mu are fast and local.
	mu      sync.Mutex
	pending map[string]*pendingWrite
	gen     uint64 // last generation handed out

	roundMu   sync.Mutex // one write-back round at a time
	closeOnce sync.Once
	stop      chan struct{}
	stopped   chan struct{}
}

// pendingWrite is the state of a build written in fallback mode and not yet written back.
type pendingWrite struct {
	// deleted marks a tombstone: the build was deleted at deletedAt.
	deleted   bool
	deletedAt time.Time
	// gen changes on every local write, so a write-back can tell whether it is still current.
	gen uint64
}

var _ buildstatus.Store = (*Store)(nil)

// New returns a Store guarding primary with a breaker configured from cfg (zero fields take
// config.DefaultResilience's values). With the fallback policy, fallback is the memory store
// that holds pending writes (required; New does not take ownership: close it after Close), and a
// write-back loop runs until Close. m and log may be nil.
func New(primary buildstatus.Store, fallback *memstore.Store, cfg config.Resilience, m *metrics.Metrics, log *slog.Logger) (*Store, error) {
	if primary == nil {
		return nil, errors.New("resilientstore: primary store is required")
	}
	cfg = resilience.WithDefaults(cfg)
	if err := resilience.Validate(cfg); err != nil {
		return nil, err
	}
	if cfg.Policy == config.PolicyFallback && fallback == nil {
		return nil, errors.New("resilientstore: the fallback policy needs a memory store")
	}
	if log == nil {
		log = slog.Default()
	}
	br, err := resilience.NewBreaker(buildstatus.Block, cfg, m, log)
	if err != nil {
		return nil, err
	}
	s := &Store{
		primary:  primary,
		mem:      fallback,
		fallback: cfg.Policy == config.PolicyFallback,
		br:       br,
		m:        m,
		log:      log,
		interval: cfg.WriteBackInterval,
		now:      time.Now,
		pending:  make(map[string]*pendingWrite),
		stop:     make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	m.SetPending(buildstatus.Block, 0)
	if s.fallback {
		go s.writeBackLoop()
	} else {
		close(s.stopped)
	}
	return s, nil
}

// Close stops the write-back loop and waits for a running round to end. Writes still pending
// stay in the memory store (see Pending). Close is idempotent and returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.stopped
	return nil
}

// Pending returns how many builds were written in fallback mode and not yet written back.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// BreakerState returns the breaker's state: "closed", "half-open" or "open".
func (s *Store) BreakerState() string { return s.br.State() }

// markLocked records a local write of id (a tombstone if deleted). Callers hold s.mu.
func (s *Store) markLocked(id string, deleted bool) {
	s.gen++
	s.pending[id] = &pendingWrite{deleted: deleted, deletedAt: s.now(), gen: s.gen}
	s.m.SetPending(buildstatus.Block, len(s.pending))
}

// pendingLocked returns id's pending write, nil if none. Callers hold s.mu.
func (s *Store) pendingLocked(id string) *pendingWrite {
	if !s.fallback {
		return nil
	}
	return s.pending[id]
}

// isUnavailable reports whether err means Redis could not be reached (or the breaker is open).
func isUnavailable(err error) bool { return redstate.IsCode(err, redstate.EUNAVAILABLE) }

// call runs fn on the primary through the breaker.
func (s *Store) call(ctx context.Context, fn func() error) error { return s.br.Do(ctx, fn) }

// notWritable is the error of a fallback-mode write that needs Redis's current value.
func notWritable(err error, what string) error {
	return redstate.Wrap(redstate.EUNAVAILABLE, err, what+" needs the current value and Redis is unavailable; retry later")
}
