// Package memstore is the embedded, in-memory buildstatus.Store: the zero-configuration default
// and the fallback the resilience wrapper degrades to when Redis is unavailable.
//
// It has the Redis backend's semantics, checked by the storetest conformance suite: documents are
// stored as the exact bytes buildstatus.Encode produces, expire after the store's TTL (refreshed
// on every write), are indexed per project and watched per build. Expired documents are invisible
// at once (every read compares the deadline with Options.Now) and are removed by a background
// sweeper, so memory stays bounded. Close stops the sweeper.
package memstore

import (
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// DefaultSweepInterval is how often the sweeper removes expired documents by default.
const DefaultSweepInterval = time.Second

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// TTL is how long a document lives after its last write. Default buildstatus.DefaultTTL.
	TTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// SweepInterval is how often expired documents are removed from memory.
	// Default DefaultSweepInterval.
	SweepInterval time.Duration
}

// Store is the in-memory buildstatus.Store. It is safe for concurrent use.
type Store struct {
	ttl time.Duration
	now func() time.Time

	mu       sync.RWMutex
	builds   map[string]*entry
	order    listOrder              // every live entry in creation order (List)
	projects map[string]*projectIdx // per-project listing order (ListProject)
	expiry   expiryHeap             // entries by deadline (sweeper)
	seq      uint64                 // last creation sequence number handed out

	watchers watchers

	closeOnce sync.Once
	done      chan struct{} // closed by Close
	swept     chan struct{} // closed when the sweeper goroutine has returned
}

var _ buildstatus.Store = (*Store)(nil)

// entry is one stored document. Its fields are guarded by Store.mu; json is never modified
// after it is stored (a write replaces the slice), and is copied before it leaves the store.
type entry struct {
	id       string
	project  string
	json     []byte
	etag     string
	score    int64     // buildstatus.ProjectScore at the last write
	expireAt time.Time // the entry is invisible from this instant on
	seq      uint64    // creation order, for List cursors
	heapIdx  int       // position in Store.expiry
	removed  bool      // deleted or expired; still referenced by order until compaction
}

// New returns a Store with opts' defaults applied and starts its sweeper.
func New(opts Options) *Store {
	if opts.TTL <= 0 {
		opts.TTL = buildstatus.DefaultTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	s := &Store{
		ttl:      opts.TTL,
		now:      opts.Now,
		builds:   make(map[string]*entry),
		projects: make(map[string]*projectIdx),
		watchers: watchers{subs: make(map[string]map[*buildstatus.EventQueue]struct{})},
		done:     make(chan struct{}),
		swept:    make(chan struct{}),
	}
	go s.sweepLoop(opts.SweepInterval)
	return s
}

// Close stops the sweeper and ends every Watch stream. The store stays usable (expired
// documents remain invisible, but are then only removed when they are next written or
// deleted). Close is idempotent and always returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	<-s.swept
	return nil
}

// checkID returns EINVALID unless id is a canonical build id.
func checkID(id string) error {
	canonical, err := buildstatus.NormalizeBuildID(id)
	if err != nil {
		return err
	}
	if canonical != id {
		return redstate.Errorf(redstate.EINVALID, "buildId %q is not canonical (want %q)", id, canonical)
	}
	return nil
}

// live returns the entry of id if it exists and has not expired at now. Callers hold s.mu.
func (s *Store) live(id string, now time.Time) *entry {
	e := s.builds[id]
	if e == nil || !now.Before(e.expireAt) {
		return nil
	}
	return e
}

// build returns a copy of e as a Build, safe to hand out. Callers hold s.mu.
func (e *entry) build() (*buildstatus.Build, error) {
	return buildstatus.NewBuild(append([]byte(nil), e.json...)), nil
}

// remove forgets e everywhere. Callers hold s.mu for writing.
func (s *Store) remove(e *entry) {
	if e.removed {
		return
	}
	e.removed = true
	delete(s.builds, e.id)
	s.expiry.remove(e)
	s.projectRemove(e)
	s.order.dropped()
}
