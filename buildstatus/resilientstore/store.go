package resilientstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

// Store is the resilient buildstatus.Store. It is safe for concurrent use.
type Store struct {
	primary  buildstatus.Store
	mem      *memstore.Store
	fallback bool // policy is resilience.PolicyFallback
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

	// j is the fallback journal (nil: off). Every change of pending is appended to it under mu
	// and fsync'ed before the write is acknowledged.
	j *journal

	// degradedMu guards the rate limit of the "writes kept in fallback" log line.
	degradedMu     sync.Mutex
	degradedLogged time.Time // last such line; zero: none in the current outage
	degradedWrites int       // fallback writes since that line

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

// closeFlushTimeout bounds Close's last write-back attempt.
const closeFlushTimeout = 2 * time.Second

// New returns a Store guarding primary with a breaker configured from cfg (zero fields take
// resilience.DefaultOptions' values). With the fallback policy, fallback is the memory store
// that holds pending writes (required; New does not take ownership: close it after Close), and a
// write-back loop runs until Close. With cfg.Journal set, the fallback journal at that path is
// opened (and locked) and replayed into fallback and the pending set before New returns; its
// records are written back by the loop. m and log may be nil. opts configure the breaker: serve
// passes resilience.WithProbe, so that the breaker closes as soon as Redis answers again.
//
// Under the fail-fast policy the journal is not used, but New refuses to start if it still
// holds pending writes (a fallback run ended with Redis down): they would be silently ignored.
func New(primary buildstatus.Store, fallback *memstore.Store, cfg resilience.Options, m *metrics.Metrics, log *slog.Logger, opts ...resilience.BreakerOption) (*Store, error) {
	if primary == nil {
		return nil, errors.New("resilientstore: primary store is required")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Policy == resilience.PolicyFallback && fallback == nil {
		return nil, errors.New("resilientstore: the fallback policy needs a memory store")
	}
	if log == nil {
		log = slog.Default()
	}
	br, err := resilience.NewBreaker(buildstatus.Block, cfg, m, log, opts...)
	if err != nil {
		return nil, err
	}
	s := &Store{
		primary:  primary,
		mem:      fallback,
		fallback: cfg.Policy == resilience.PolicyFallback,
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
	switch {
	case !s.fallback:
		if err := checkUnusedJournal(cfg.Journal); err != nil {
			br.Close()
			return nil, err
		}
		close(s.stopped)
		return s, nil
	case cfg.Journal == "":
		log.Warn("fallback writes are not durable across a process crash; set publish.build-status.resilience.journal to keep them on local disk until written back",
			slog.String("policy", cfg.Policy))
	default:
		if err := s.openJournal(cfg.Journal); err != nil {
			br.Close()
			return nil, err
		}
	}
	go s.writeBackLoop()
	return s, nil
}

// checkUnusedJournal fails if path (may be "") holds journal records.
func checkUnusedJournal(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return nil
	}
	return fmt.Errorf("resilientstore: the fallback journal %s holds writes that were never written back (%d bytes); start with policy %s to write them back, or remove the file to discard them",
		path, fi.Size(), resilience.PolicyFallback)
}

// Close stops the write-back loop, waits for a running round to end and, if Redis is reachable,
// makes one last write-back attempt bounded by closeFlushTimeout, then stops the breaker's probe. Writes still pending then stay
// in the memory store (see Pending) and, with a journal, in the journal, which is closed and
// replayed by the next New on the same path; without a journal they are lost with the process.
// Close is idempotent; it returns the error of closing the journal.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.stopped
		defer s.br.Close()
		if !s.fallback {
			return
		}
		if s.Pending() > 0 && s.br.Allow() {
			ctx, cancel := context.WithTimeout(context.Background(), closeFlushTimeout)
			s.writeBackRoundCtx(ctx)
			cancel()
		}
		n := s.Pending()
		switch {
		case n > 0 && s.j != nil:
			s.log.Warn("fallback writes still pending at shutdown are kept in the journal and written back after the next start",
				slog.Int("pending", n), slog.String("journal", s.j.path))
		case n > 0:
			s.log.Error("fallback writes still pending at shutdown are lost (no journal configured)", slog.Int("pending", n))
		}
		if s.j != nil {
			err = s.j.close()
		}
	})
	<-s.stopped
	return err
}

// Pending returns how many builds were written in fallback mode and not yet written back.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// BreakerState returns the breaker's state: "closed", "half-open" or "open".
func (s *Store) BreakerState() string { return s.br.State() }

// markLocked records a local write of id (a tombstone if deleted) and appends it to the
// journal, if any. It returns the journal sequence number to pass to durable once s.mu is
// released. Callers hold s.mu and have applied the write to the memory store.
func (s *Store) markLocked(ctx context.Context, id string, deleted bool) (uint64, error) {
	s.gen++
	p := &pendingWrite{deleted: deleted, deletedAt: s.now(), gen: s.gen}
	s.pending[id] = p
	s.m.SetPending(buildstatus.Block, len(s.pending))
	if s.j == nil {
		return 0, nil
	}
	rec, ok := s.recordLocked(ctx, id, p)
	if !ok {
		return 0, redstate.Errorf(redstate.EINTERNAL, "fallback write of build %s vanished from memory", id)
	}
	seq, err := s.j.append(rec)
	if err != nil {
		return 0, journalError(err)
	}
	return seq, nil
}

// durable waits until the journal record seq is on disk (no-op without a journal). Call it
// without holding s.mu, before acknowledging a fallback write.
func (s *Store) durable(seq uint64) error {
	if s.j == nil {
		return nil
	}
	if err := s.j.sync(seq); err != nil {
		return journalError(err)
	}
	return nil
}

// journalError is the error of a fallback write the journal could not make durable. The write
// stays in memory (and is written back if this process lives), but is not acknowledged.
func journalError(err error) error {
	return redstate.Wrap(redstate.EUNAVAILABLE, err, "redis is unavailable and the fallback journal could not record the write; retry later")
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
