// Package memindex is the in-memory index.Store: the same semantics as the Redis store,
// checked by indextest, for tests and the embedded default.
package memindex

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// Store is the in-memory index.Store. It is safe for concurrent use; each Apply is atomic.
type Store struct {
	now func() time.Time

	mu      sync.RWMutex
	strings map[string]stringValue
	hashes  map[string]map[string]json.RawMessage
	lists   map[string][][]byte
}

type stringValue struct {
	value   string
	expires time.Time // zero: never
}

var _ index.Store = (*Store)(nil)

// New returns an empty Store using the real clock.
func New() *Store { return NewWithClock(time.Now) }

// NewWithClock returns an empty Store whose TTLs run on now.
func NewWithClock(now func() time.Time) *Store {
	return &Store{now: now, strings: map[string]stringValue{}, hashes: map[string]map[string]json.RawMessage{}, lists: map[string][][]byte{}}
}

// get returns a live string value. s.mu must be held.
func (s *Store) get(key string) (string, bool) {
	v, ok := s.strings[key]
	if !ok || (!v.expires.IsZero() && !s.now().Before(v.expires)) {
		return "", false
	}
	return v.value, true
}

// Apply implements index.Store.
func (s *Store) Apply(_ context.Context, writes []index.RowWrite) ([]index.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]index.Outcome, len(writes))
	for i, w := range writes {
		cur, found := s.get(w.VersionKey)
		if found && !index.Newer(w.Version, cur) {
			out[i] = index.Stale
			continue
		}
		if floor, ok := s.get(w.FloorKey); ok && index.Older(w.Version, floor) {
			out[i] = index.Stale
			continue
		}
		// The memory store is never of layout 1: the relation is in the version key.
		_, _, relation, _ := index.ParseRowValue(cur)
		for _, k := range index.DecodeRelation(w.TablePrefix, relation) {
			if w.Delete || !slices.Contains(w.Keys, k) {
				s.hdel(k, w.ID)
			}
		}
		value := stringValue{value: w.Value()}
		if w.Delete {
			value.expires = s.now().Add(w.TTL)
		} else {
			for _, k := range w.Keys {
				h := s.hashes[k]
				if h == nil {
					h = map[string]json.RawMessage{}
					s.hashes[k] = h
				}
				h[w.ID] = slices.Clone(w.Row)
			}
		}
		s.strings[w.VersionKey] = value
		out[i] = index.Applied
	}
	return out, nil
}

func (s *Store) hdel(key, field string) {
	if h := s.hashes[key]; h != nil {
		delete(h, field)
		if len(h) == 0 {
			delete(s.hashes, key)
		}
	}
}

// Rows implements index.Store.
func (s *Store) Rows(_ context.Context, key string) (map[string]json.RawMessage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]json.RawMessage{}
	for f, v := range s.hashes[key] {
		out[f] = slices.Clone(v)
	}
	return out, nil
}

// RowsBatch implements index.Store.
func (s *Store) RowsBatch(ctx context.Context, keys []string) ([]map[string]json.RawMessage, error) {
	out := make([]map[string]json.RawMessage, len(keys))
	for i, k := range keys {
		out[i], _ = s.Rows(ctx, k)
	}
	return out, nil
}

// Scan implements index.Store: the cursor is an offset into the fields in sorted order.
func (s *Store) Scan(_ context.Context, key, cursor string, count int) (index.Page, error) {
	if count <= 0 {
		count = 100
	}
	start := 0
	if cursor != "" && cursor != "0" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return index.Page{}, redstate.Errorf(redstate.EINVALID, "cursor %q is not a cursor this store returned", cursor)
		}
		start = n
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	h := s.hashes[key]
	fields := make([]string, 0, len(h))
	for f := range h {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	page := index.Page{Rows: map[string]json.RawMessage{}, Cursor: "0"}
	for i := start; i < len(fields) && i < start+count; i++ {
		page.Rows[fields[i]] = slices.Clone(h[fields[i]])
	}
	if start+count < len(fields) {
		page.Cursor = strconv.Itoa(start + count)
	}
	return page, nil
}

// Dump implements index.Store.
func (s *Store) Dump(_ context.Context, pattern string) (map[string]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]string{}
	for k := range s.strings {
		if v, ok := s.get(k); ok && match(pattern, k) {
			out[k] = "string:" + v
		}
	}
	for k, h := range s.hashes {
		if match(pattern, k) {
			out[k] = index.CanonicalHash(h)
		}
	}
	for k, l := range s.lists {
		if match(pattern, k) && len(l) > 0 {
			out[k] = "list:" + strconv.Itoa(len(l))
		}
	}
	return out, nil
}

// globToPath makes a Redis glob usable with path.Match (which treats '/' specially).
func globToPath(s string) string { return strings.ReplaceAll(s, "/", "\x00") }

// DeadLetter implements index.Store.
func (s *Store) DeadLetter(_ context.Context, key string, entry []byte, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := append([][]byte{slices.Clone(entry)}, s.lists[key]...)
	if len(l) > max {
		l = l[:max]
	}
	s.lists[key] = l
	return nil
}

// DeadLetters returns the dead-letter list key, newest first.
func (s *Store) DeadLetters(key string) [][]byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.lists[key])
}

// RaiseFloor implements index.Store.
func (s *Store) RaiseFloor(_ context.Context, f index.FloorWrite) (index.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.get(f.Key); ok && !index.Newer(f.Version, cur) {
		return index.Stale, nil
	}
	s.strings[f.Key] = stringValue{value: index.VersionValue(f.Version, f.Stamp), expires: s.now().Add(f.TTL)}
	return index.Applied, nil
}

// ScanKeys implements index.Store: the cursor is an offset into the matching string keys in
// sorted order, read afresh on each call (a key added meanwhile may shift the page, so keys
// may come twice, never be skipped if present throughout).
func (s *Store) ScanKeys(_ context.Context, pattern, cursor string, count int) ([]string, string, error) {
	if count <= 0 {
		count = 100
	}
	start := 0
	if cursor != "" && cursor != "0" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return nil, "", redstate.Errorf(redstate.EINVALID, "cursor %q is not a cursor this store returned", cursor)
		}
		start = n
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []string
	for k := range s.strings {
		if _, ok := s.get(k); ok && match(pattern, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if start >= len(keys) {
		return nil, "0", nil
	}
	end := min(start+count, len(keys))
	next := "0"
	if end < len(keys) {
		next = strconv.Itoa(end)
	}
	return keys[start:end], next, nil
}

// match reports whether key matches the Redis glob pattern.
func match(pattern, key string) bool {
	ok, _ := path.Match(globToPath(pattern), globToPath(key))
	return ok
}

// Remove implements index.Store.
func (s *Store) Remove(_ context.Context, key, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hdel(key, id)
	return nil
}

// AddCounters implements index.Store: the counters are a hash of decimal values, as in Redis.
func (s *Store) AddCounters(_ context.Context, key string, c index.CounterSet) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hashes[key]
	if h == nil {
		h = map[string]json.RawMessage{}
		s.hashes[key] = h
	}
	for f, n := range index.CounterFields(c) {
		cur, _ := strconv.ParseInt(string(h[f]), 10, 64)
		h[f] = json.RawMessage(strconv.FormatInt(cur+n, 10))
	}
	return nil
}

// Counters implements index.Store.
func (s *Store) Counters(_ context.Context, key string) (index.CounterSet, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fields := map[string]int64{}
	for f, v := range s.hashes[key] {
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			fields[f] = n
		}
	}
	return index.ParseCounterFields(fields), nil
}

// MigrateRows implements index.Store. The memory store lives only as long as its process and
// has only ever written layout 2: it holds no relation key to move.
func (s *Store) MigrateRows(context.Context, index.LayoutMigration) (int, error) { return 0, nil }

// MarkLayout implements index.Store.
func (s *Store) MarkLayout(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strings[key] = stringValue{value: strconv.Itoa(index.LayoutVersion)}
	return nil
}

// LayoutMarked implements index.Store.
func (s *Store) LayoutMarked(_ context.Context, key string) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.get(key)
	return ok, nil
}
