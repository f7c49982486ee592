package lease

import (
	"context"
	"strings"
	"sync"
	"time"
)

var _ Store = (*Memory)(nil)

// Memory is the memory Store: leases shared by the goroutines of one process, with the Redis
// Store's semantics (fences above the clock in microseconds and above the counter, the counter
// expiring CounterTTL after the last acquisition, an acquisition with the holder's own token
// answering the counter). Expired leases and counters are dropped when next touched. Safe for
// concurrent use.
type Memory struct {
	now func() time.Time
	mu  sync.Mutex
	// leases maps a lease key to its holder; counters a fence counter key to its last fence.
	leases   map[string]expiring[string]
	counters map[string]expiring[int64]
}

// expiring is a value with its expiry.
type expiring[T any] struct {
	val     T
	expires time.Time
}

// NewMemory returns a Memory store with nothing held, on the clock now (nil: time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, leases: map[string]expiring[string]{}, counters: map[string]expiring[int64]{}}
}

// live returns m[key] unless missing or expired at now, dropping an expired entry (caller
// holds mu).
func live[T any](m map[string]expiring[T], key string, now time.Time) (T, bool) {
	e, ok := m[key]
	if ok && !now.Before(e.expires) {
		delete(m, key)
		ok = false
	}
	return e.val, ok
}

// TryAcquire implements Store.
func (m *Memory) TryAcquire(_ context.Context, keys Keys, token string, ttl time.Duration) (int64, bool, error) {
	if err := checkCall(keys, token, ttl, true); err != nil {
		return 0, false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if holder, held := live(m.leases, keys.Lease, now); held {
		if holder != token {
			return 0, false, nil
		}
		fence, _ := live(m.counters, keys.Fence, now)
		return fence, fence != 0, nil
	}
	fence := now.UnixMicro()
	if c, ok := live(m.counters, keys.Fence, now); ok && c >= fence {
		fence = c + 1
	}
	m.counters[keys.Fence] = expiring[int64]{val: fence, expires: now.Add(CounterTTL(ttl))}
	m.leases[keys.Lease] = expiring[string]{val: token, expires: now.Add(ttl)}
	return fence, true, nil
}

// Renew implements Store.
func (m *Memory) Renew(_ context.Context, keys Keys, token string, ttl time.Duration) (bool, error) {
	if err := checkCall(keys, token, ttl, true); err != nil {
		return false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if holder, held := live(m.leases, keys.Lease, now); !held || holder != token {
		return false, nil
	}
	m.leases[keys.Lease] = expiring[string]{val: token, expires: now.Add(ttl)}
	return true, nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, keys Keys, token string) (bool, error) {
	if err := checkCall(keys, token, 0, false); err != nil {
		return false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if holder, held := live(m.leases, keys.Lease, now); !held || holder != token {
		return false, nil
	}
	delete(m.leases, keys.Lease)
	return true, nil
}

// Holder implements Store.
func (m *Memory) Holder(_ context.Context, keys Keys) (string, error) {
	if err := keys.Validate(); err != nil {
		return "", err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	holder, _ := live(m.leases, keys.Lease, now)
	return holder, nil
}

// Held returns the leases held now whose key starts with prefix, lease key → holder's token:
// what a SCAN of the lease keys gives on Redis, for an inspector listing the holders.
func (m *Memory) Held(prefix string) map[string]string {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for key := range m.leases {
		if holder, ok := live(m.leases, key, now); ok && strings.HasPrefix(key, prefix) {
			out[key] = holder
		}
	}
	return out
}
