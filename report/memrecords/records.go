// Package memrecords is the in-memory report.RecordStore, with the Redis and SQL stores'
// semantics (checked by reporttest.RunRecordStoreSuite). Nothing survives the process.
package memrecords

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Retention is how long a record is kept after its last write.
	// Default report.DefaultRecordRetention.
	Retention time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Store is the in-memory report.RecordStore. It is safe for concurrent use. Expired
// records are invisible at once and removed when next touched.
type Store struct {
	retention time.Duration
	now       func() time.Time

	mu      sync.Mutex
	records map[int64]*report.Record
}

var _ report.RecordStore = (*Store)(nil)

// New returns an empty Store.
func New(opts Options) *Store {
	if opts.Retention <= 0 {
		opts.Retention = report.DefaultRecordRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{retention: opts.Retention, now: opts.Now, records: make(map[int64]*report.Record)}
}

// live returns the unexpired record id, or nil. s.mu must be held.
func (s *Store) live(id int64) *report.Record {
	r := s.records[id]
	if r != nil && !s.now().Before(r.UpdatedAt.Add(s.retention)) {
		delete(s.records, id)
		return nil
	}
	return r
}

// mustLive returns the unexpired record or ENOTFOUND. s.mu must be held.
func (s *Store) mustLive(id int64) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	r := s.live(id)
	if r == nil {
		return nil, redstate.Errorf(redstate.ENOTFOUND, "record %d not found", id)
	}
	return r, nil
}

// Create implements report.RecordStore.
func (s *Store) Create(_ context.Context, id int64, status int, answers json.RawMessage) (*report.Record, error) {
	if err := report.CheckCreate(id, status, answers); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live(id) != nil {
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d exists", id)
	}
	r := &report.Record{ID: id, Status: status, Answers: clone(answers), UpdatedAt: s.now()}
	s.records[id] = r
	return copyRecord(r), nil
}

// Submit implements report.RecordStore.
func (s *Store) Submit(_ context.Context, id int64, answers json.RawMessage) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	if err := report.CheckRecordJSON("answers", answers); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, err := s.mustLive(id); err == nil && !report.Submittable(cur.Status) {
		return nil, report.SubmitConflict(id, cur.Status)
	}
	r := &report.Record{ID: id, Status: report.StatusGenerating, Answers: clone(answers), UpdatedAt: s.now()}
	s.records[id] = r
	return copyRecord(r), nil
}

// Get implements report.RecordStore.
func (s *Store) Get(_ context.Context, id int64) (*report.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	return copyRecord(r), nil
}

// SetResult implements report.RecordStore.
func (s *Store) SetResult(_ context.Context, id int64, result json.RawMessage) (*report.Record, error) {
	if err := report.CheckRecordJSON("result", result); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	r.Status, r.Result, r.Error, r.UpdatedAt = report.StatusDone, clone(result), "", s.now()
	return copyRecord(r), nil
}

// SetFailed implements report.RecordStore.
func (s *Store) SetFailed(_ context.Context, id int64, reason string) (*report.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	r.Status, r.Result, r.Error, r.UpdatedAt = report.StatusFailed, nil, reason, s.now()
	return copyRecord(r), nil
}

// ResetForRegeneration implements report.RecordStore.
func (s *Store) ResetForRegeneration(_ context.Context, id int64) (*report.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	if !report.Regenerable(r.Status) {
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d has status %d (%s); only 3 or 5 may be regenerated", id, r.Status, report.StatusText(r.Status))
	}
	r.Status, r.Result, r.Error, r.UpdatedAt = report.StatusGenerating, nil, "", s.now()
	return copyRecord(r), nil
}

// ListGeneratingOlderThan implements report.RecordStore.
func (s *Store) ListGeneratingOlderThan(_ context.Context, age time.Duration) ([]int64, error) {
	if age < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "age must be >= 0")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.now().Add(-age)
	ids := []int64{}
	for id := range s.records {
		if r := s.live(id); r != nil && r.Status == report.StatusGenerating && !r.UpdatedAt.After(cutoff) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

func clone(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// copyRecord returns a deep copy of r with StatusText filled.
func copyRecord(r *report.Record) *report.Record {
	c := *r
	c.Answers, c.Result = clone(r.Answers), clone(r.Result)
	c.StatusText = report.StatusText(c.Status)
	return &c
}
