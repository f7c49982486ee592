package history

import (
	"context"
	"maps"
	"sync"
	"time"
)

// MemoryStore keeps the history in process memory: the store of a process without Redis. It
// holds what a RedisStore holds (the same tiers, retention and registry), for this process only,
// and loses it when the process ends. Safe for concurrent use.
type MemoryStore struct {
	now func() time.Time

	mu      sync.Mutex
	buckets map[memBucketKey]map[string]float64
	series  map[string]int64
}

type memBucketKey struct {
	step, start int64
}

// NewMemoryStore returns an empty store whose retention follows now (nil: time.Now).
func NewMemoryStore(now func() time.Time) *MemoryStore {
	if now == nil {
		now = time.Now
	}
	return &MemoryStore{now: now, buckets: map[memBucketKey]map[string]float64{}, series: map[string]int64{}}
}

// Write implements Store.
func (s *MemoryStore) Write(_ context.Context, b Batch) error {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	for _, w := range b.plan(now) {
		k := memBucketKey{w.tier.Step, w.start}
		f := s.buckets[k]
		if f == nil {
			f = map[string]float64{}
			s.buckets[k] = f
		}
		for field, n := range w.incr {
			f[field] += float64(n)
		}
		maps.Copy(f, w.set)
		if w.up {
			f[upField] = 1
		}
	}
	for field, sec := range b.Seen {
		if sec > s.series[field] {
			s.series[field] = sec
		}
	}
	return nil
}

// expire drops the buckets and series past their retention at now.
func (s *MemoryStore) expire(now int64) {
	for k := range s.buckets {
		if t, ok := tierOfStep(k.step); !ok || t.expiresAt(k.start) <= now {
			delete(s.buckets, k)
		}
	}
	for field, sec := range s.series {
		if sec+seriesRetention <= now {
			delete(s.series, field)
		}
	}
}

// Read implements Store.
func (s *MemoryStore) Read(_ context.Context, t Tier, from, to int64, fields []string, _ bool) ([]map[string]float64, error) {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	var out []map[string]float64
	for start := from; start <= to; start += t.Step {
		got := map[string]float64{}
		if f := s.buckets[memBucketKey{t.Step, start}]; f != nil {
			for _, field := range fields {
				if v, ok := f[field]; ok {
					got[field] = v
				}
			}
		}
		out = append(out, got)
	}
	return out, nil
}

// Series implements Store.
func (s *MemoryStore) Series(context.Context) (map[string]int64, error) {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	return maps.Clone(s.series), nil
}

// Usage implements Store: Bytes estimates each field at its name's length plus 16 bytes.
func (s *MemoryStore) Usage(context.Context) (Usage, error) {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	u := Usage{Buckets: int64(len(s.buckets)), Series: int64(len(s.series))}
	if len(s.series) > 0 {
		u.Buckets++
	}
	for _, f := range s.buckets {
		for field := range f {
			u.Bytes += int64(len(field)) + 16
		}
	}
	for field := range s.series {
		u.Bytes += int64(len(field)) + 16
	}
	return u, nil
}

// seriesRetention is how long a series stays in the registry after its last write: as long as
// the longest tier keeps buckets.
var seriesRetention = int64(Tiers[len(Tiers)-1].Retention / time.Second)

// tierOfStep returns the tier of a bucket step.
func tierOfStep(step int64) (Tier, bool) {
	for _, t := range Tiers {
		if t.Step == step {
			return t, true
		}
	}
	return Tier{}, false
}
