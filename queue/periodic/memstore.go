package periodic

import (
	"context"
	"fmt"
	"sync"
	"time"
)

var _ Store = (*MemoryStore)(nil)

// MemoryStore is the Store of one process (the memory backend), with RedisStore's semantics.
// Safe for concurrent use.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]Record
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{records: map[string]Record{}} }

// Init implements Store.
func (m *MemoryStore) Init(_ context.Context, name string, r Record) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.records[name]; ok {
		return cur, nil
	}
	r.At, r.Claimed = r.At.Truncate(time.Second), r.Claimed.Truncate(time.Millisecond)
	m.records[name] = r
	return r, nil
}

// Begin implements Store.
func (m *MemoryStore) Begin(_ context.Context, name string, at time.Time, fence int64, now time.Time) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, found := m.records[name]
	r, begun, err := begin(cur, found, at.Truncate(time.Second), fence, now.Truncate(time.Millisecond))
	if begun {
		m.records[name] = r
	}
	return r, begun, err
}

// Finish implements Store.
func (m *MemoryStore) Finish(_ context.Context, name string, at time.Time, fence int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, found := m.records[name]
	if !found || !cur.At.Equal(at.Truncate(time.Second)) || cur.Fence != fence {
		return fmt.Errorf("%w: %s's record is %+v, not tick %d of fence %d", ErrStale, name, cur, at.Unix(), fence)
	}
	cur.Done = true
	m.records[name] = cur
	return nil
}
