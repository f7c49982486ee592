package queue

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// PoolSpec is one worker pool of the configuration (an element of queue.pools): one worker
// serving several of queue.queues with one budget of handlers, weighted or strict between them
// (NewPool; docs/queue.md, "Priorities"). Zero fields take the defaults stated on them
// (Effective). A queue in a pool has no worker of its own; a queue in no pool keeps one.
type PoolSpec struct {
	// Name names the pool in logs and in the queue listings: 1..200 characters from
	// [A-Za-z0-9:_.-], unique among the pools.
	Name string `koanf:"name"`
	// Concurrency is how many jobs of all its queues run at once (default DefaultConcurrency).
	Concurrency int `koanf:"concurrency"`
	// Prefetch is how many jobs the pool may hold dequeued beyond the running ones (default:
	// Concurrency; 0 = none, for strict priorities at every start).
	Prefetch *int `koanf:"prefetch"`
	// Strict always takes the highest-priority queue (the greatest weight) that has a job;
	// otherwise the queues share the jobs by weight.
	Strict bool `koanf:"strict"`
	// BlockTimeout is how long the pool, finding every queue empty, blocks on its first queue
	// before asking all of them again (default DefaultPoolBlockTimeout): a job arriving on
	// another queue while the pool idles waits up to about this long.
	BlockTimeout time.Duration `koanf:"block-timeout"`
	// Queues are the pool's queues with their weights (at least one).
	Queues []PoolMember `koanf:"queues"`
}

// PoolMember is one queue of a pool (queue.pools[].queues[]).
type PoolMember struct {
	// Name is one of queue.queues, in no other pool.
	Name string `koanf:"name"`
	// Weight is the queue's share of a weighted pool, or its priority in a strict one
	// (greater first, all different); at least 1, default 1.
	Weight *int `koanf:"weight"`
}

// EffectiveWeight returns Weight, 1 when unset.
func (m PoolMember) EffectiveWeight() int {
	if m.Weight == nil {
		return 1
	}
	return *m.Weight
}

// Settings returns the pool's PoolSettings, defaults applied (Concurrency, Prefetch,
// BlockTimeout); the caller adds the rest (consumer id, shutdown timeout, logger).
func (p PoolSpec) Settings() PoolSettings {
	s := PoolSettings{Name: p.Name, Concurrency: p.Concurrency, Strict: p.Strict, BlockTimeout: p.BlockTimeout}
	if s.Concurrency == 0 {
		s.Concurrency = DefaultConcurrency
	}
	if s.BlockTimeout == 0 {
		s.BlockTimeout = DefaultPoolBlockTimeout
	}
	s.Prefetch = s.Concurrency
	if p.Prefetch != nil {
		s.Prefetch, s.NoPrefetch = *p.Prefetch, *p.Prefetch == 0
	}
	return s
}

// validatePools reports the problems of the pools: names valid and unique, settings in range,
// each member one of queues (by name, handlers resolved) with a worker to share (not handler
// external) and no concurrency (above the default) or prefetch of its own, in one pool only, with a weight of at
// least 1, and different weights in a strict pool.
func validatePools(pools []PoolSpec, queues []Spec) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	specs := map[string]int{}
	for i, s := range queues {
		specs[s.Name] = i
	}
	names := map[string]int{}
	member := map[string]string{} // queue → key of its first membership
	for i, p := range pools {
		at := fmt.Sprintf("queue.pools[%d].", i)
		if err := ValidateQueueName(p.Name); err != nil {
			add(at+"name", "pool names follow the queue-name rule: %v", err)
		} else if j, dup := names[p.Name]; dup {
			add(at+"name", "%q is also the name of queue.pools[%d]; names must be unique", p.Name, j)
		} else {
			names[p.Name] = i
		}
		if p.Concurrency < 0 {
			add(at+"concurrency", "must be at least 1, got %d", p.Concurrency)
		}
		if p.Prefetch != nil && *p.Prefetch < 0 {
			add(at+"prefetch", "must not be negative, got %d (0 means no prefetch)", *p.Prefetch)
		}
		if p.BlockTimeout < 0 {
			add(at+"block-timeout", "must be positive, got %s", p.BlockTimeout)
		}
		if len(p.Queues) == 0 {
			add(at+"queues", "must name at least one of queue.queues")
		}
		priorities := map[int]int{}
		for j, m := range p.Queues {
			key := fmt.Sprintf("%squeues[%d]", at, j)
			if w := m.EffectiveWeight(); w < 1 {
				add(key+".weight", "must be at least 1, got %d", w)
			} else if k, dup := priorities[w]; dup && p.Strict {
				add(key+".weight", "%d is also the weight of %squeues[%d]; the priorities of a strict pool must differ", w, at, k)
			} else {
				priorities[w] = j
			}
			si, ok := specs[m.Name]
			switch {
			case !ok:
				add(key+".name", "%q is not one of queue.queues", m.Name)
				continue
			case member[m.Name] != "":
				add(key+".name", "%q is already in %s; a queue belongs to one pool at most", m.Name, member[m.Name])
				continue
			}
			member[m.Name] = key
			s := queues[si]
			qkey := fmt.Sprintf("queue.queues[%d].", si)
			if s.Handler == HandlerExternal {
				add(key+".name", "%q has handler external (no worker here); only queues this program consumes can share a pool", m.Name)
			}
			if s.Concurrency > DefaultConcurrency {
				// The default (1, what a loaded queue has when it names none) is no conflict.
				add(qkey+"concurrency", "%q is in pool %q, whose concurrency it shares; set concurrency on the pool", s.Name, p.Name)
			}
			if s.Prefetch != nil {
				add(qkey+"prefetch", "%q is in pool %q, whose prefetch it shares; set prefetch on the pool", s.Name, p.Name)
			}
		}
	}
	return errs
}

// Membership returns the pool serving queue name and the queue's weight there (defaults
// applied), or nil when the queue is in no pool.
func (c Config) Membership(name string) *PoolMembership {
	p, ok := c.Pooled()[name]
	if !ok {
		return nil
	}
	members := slices.Clone(p.Queues)
	slices.SortStableFunc(members, func(a, b PoolMember) int { return cmp.Compare(b.EffectiveWeight(), a.EffectiveWeight()) })
	out := &PoolMembership{Pool: p.Name, Strict: p.Strict, Concurrency: p.Settings().Concurrency}
	for _, m := range members {
		out.Queues = append(out.Queues, m.Name)
		if m.Name == name {
			out.Weight = m.EffectiveWeight()
		}
	}
	return out
}

// Pooled returns the pool each queue of a pool belongs to, by queue name.
func (c Config) Pooled() map[string]PoolSpec {
	out := map[string]PoolSpec{}
	for _, p := range c.Pools {
		for _, m := range p.Queues {
			out[m.Name] = p
		}
	}
	return out
}
