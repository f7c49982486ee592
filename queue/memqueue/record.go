package memqueue

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// RecordOptions configure a RecordStore. The zero value is ready to use.
type RecordOptions struct {
	// Retention is how long a record is kept after its last write.
	// Default queue.DefaultRecordRetention.
	Retention time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// RecordStore is the in-memory queue.RecordStore. It is safe for concurrent use. Expired
// records are invisible at once and removed when next touched.
type RecordStore struct {
	retention time.Duration
	now       func() time.Time

	mu      sync.Mutex
	records map[int64]*queue.Record
}

var _ queue.RecordStore = (*RecordStore)(nil)

// NewRecordStore returns an empty RecordStore.
func NewRecordStore(opts RecordOptions) *RecordStore {
	if opts.Retention <= 0 {
		opts.Retention = queue.DefaultRecordRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &RecordStore{retention: opts.Retention, now: opts.Now, records: make(map[int64]*queue.Record)}
}

// live returns the unexpired record id, or nil. s.mu must be held.
func (s *RecordStore) live(id int64) *queue.Record {
	r := s.records[id]
	if r != nil && !s.now().Before(r.UpdatedAt.Add(s.retention)) {
		delete(s.records, id)
		return nil
	}
	return r
}

// mustLive returns the unexpired record or ENOTFOUND. s.mu must be held.
func (s *RecordStore) mustLive(id int64) (*queue.Record, error) {
	if err := queue.CheckRecordID(id); err != nil {
		return nil, err
	}
	r := s.live(id)
	if r == nil {
		return nil, redstate.Errorf(redstate.ENOTFOUND, "record %d not found", id)
	}
	return r, nil
}

// Create implements queue.RecordStore.
func (s *RecordStore) Create(_ context.Context, id int64, status int, answers json.RawMessage) (*queue.Record, error) {
	if err := queue.CheckRecordID(id); err != nil {
		return nil, err
	}
	if !queue.ValidStatus(status) {
		return nil, redstate.Errorf(redstate.EINVALID, "unknown record status %d", status)
	}
	if err := queue.CheckRecordJSON("answers", answers); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live(id) != nil {
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d exists", id)
	}
	r := &queue.Record{ID: id, Status: status, Answers: clone(answers), UpdatedAt: s.now()}
	s.records[id] = r
	return copyRecord(r), nil
}

// Submit implements queue.RecordStore.
func (s *RecordStore) Submit(_ context.Context, id int64, answers json.RawMessage) (*queue.Record, error) {
	if err := queue.CheckRecordID(id); err != nil {
		return nil, err
	}
	if err := queue.CheckRecordJSON("answers", answers); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, err := s.mustLive(id); err == nil && !queue.Submittable(cur.Status) {
		return nil, queue.SubmitConflict(id, cur.Status)
	}
	r := &queue.Record{ID: id, Status: queue.StatusGenerating, Answers: clone(answers), UpdatedAt: s.now()}
	s.records[id] = r
	return copyRecord(r), nil
}

// Get implements queue.RecordStore.
func (s *RecordStore) Get(_ context.Context, id int64) (*queue.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	return copyRecord(r), nil
}

// SetResult implements queue.RecordStore.
func (s *RecordStore) SetResult(_ context.Context, id int64, result json.RawMessage) (*queue.Record, error) {
	if err := queue.CheckRecordJSON("result", result); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	r.Status, r.Result, r.Error, r.UpdatedAt = queue.StatusDone, clone(result), "", s.now()
	return copyRecord(r), nil
}

// SetFailed implements queue.RecordStore.
func (s *RecordStore) SetFailed(_ context.Context, id int64, reason string) (*queue.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	r.Status, r.Result, r.Error, r.UpdatedAt = queue.StatusFailed, nil, reason, s.now()
	return copyRecord(r), nil
}

// ResetForRegeneration implements queue.RecordStore.
func (s *RecordStore) ResetForRegeneration(_ context.Context, id int64) (*queue.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.mustLive(id)
	if err != nil {
		return nil, err
	}
	if !queue.Regenerable(r.Status) {
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d has status %d (%s); only 3 or 5 may be regenerated", id, r.Status, queue.StatusText(r.Status))
	}
	r.Status, r.Result, r.Error, r.UpdatedAt = queue.StatusGenerating, nil, "", s.now()
	return copyRecord(r), nil
}

// ListGeneratingOlderThan implements queue.RecordStore.
func (s *RecordStore) ListGeneratingOlderThan(_ context.Context, age time.Duration) ([]int64, error) {
	if age < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "age must be >= 0")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.now().Add(-age)
	ids := []int64{}
	for id := range s.records {
		if r := s.live(id); r != nil && r.Status == queue.StatusGenerating && !r.UpdatedAt.After(cutoff) {
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
func copyRecord(r *queue.Record) *queue.Record {
	c := *r
	c.Answers, c.Result = clone(r.Answers), clone(r.Result)
	c.StatusText = queue.StatusText(c.Status)
	return &c
}
