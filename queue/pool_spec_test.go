package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
)

func intPtr(n int) *int { return &n }

// TestPoolSpec_Validate: every rule of queue.pools is reported under its key at once.
func TestPoolSpec_Validate(t *testing.T) {
	c := queue.Config{RecordStore: "memory", Reconciler: queue.ReconcilerConfig{Age: time.Minute, Interval: time.Minute},
		Queues: []queue.Spec{{Name: "a"}, {Name: "b", Concurrency: 2, Prefetch: intPtr(1)}, {Name: "c", Handler: queue.HandlerExternal}, {Name: "d"}},
		Pools: []queue.PoolSpec{
			{Name: "p", Strict: true, Concurrency: -1, Prefetch: intPtr(-1), BlockTimeout: -time.Second,
				Queues: []queue.PoolMember{{Name: "a"}, {Name: "b"}, {Name: "nope", Weight: intPtr(0)}}},
			{Name: "p", Queues: []queue.PoolMember{{Name: "a", Weight: intPtr(2)}, {Name: "c"}}},
			{Name: "bad name!"},
		}}
	err := c.Validate("cron", "memory")
	for _, want := range []string{
		`queue.pools[0].concurrency: must be at least 1, got -1`,
		`queue.pools[0].prefetch: must not be negative, got -1`,
		`queue.pools[0].block-timeout: must be positive, got -1s`,
		`queue.pools[0].queues[1].weight: 1 is also the weight of queue.pools[0].queues[0]; the priorities of a strict pool must differ`,
		`queue.pools[0].queues[2].weight: must be at least 1, got 0`,
		`queue.pools[0].queues[2].name: "nope" is not one of queue.queues`,
		`queue.queues[1].concurrency: "b" is in pool "p", whose concurrency it shares; set concurrency on the pool`,
		`queue.queues[1].prefetch: "b" is in pool "p", whose prefetch it shares; set prefetch on the pool`,
		`queue.pools[1].name: "p" is also the name of queue.pools[0]; names must be unique`,
		`queue.pools[1].queues[0].name: "a" is already in queue.pools[0].queues[0]; a queue belongs to one pool at most`,
		`queue.pools[1].queues[1].name: "c" has handler external (no worker here)`,
		`queue.pools[2].name: pool names follow the queue-name rule`,
		`queue.pools[2].queues: must name at least one of queue.queues`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "queue.pools[0].queues[0]:") {
		t.Errorf("a valid member was reported: %v", err)
	}

	c.Queues[1].Concurrency, c.Queues[1].Prefetch = 0, nil
	c.Pools = []queue.PoolSpec{{Name: "p", Strict: true, Queues: []queue.PoolMember{{Name: "a", Weight: intPtr(3)}, {Name: "b"}}},
		{Name: "q", Queues: []queue.PoolMember{{Name: "d", Weight: intPtr(6)}}}}
	if err := c.Validate("cron", "memory"); err != nil {
		t.Fatal(err)
	}
	s := c.Pools[0].Settings()
	if s.Name != "p" || !s.Strict || s.Concurrency != queue.DefaultConcurrency || s.Prefetch != queue.DefaultConcurrency ||
		s.BlockTimeout != queue.DefaultPoolBlockTimeout {
		t.Errorf("effective pool settings %+v", s)
	}
	if s := (queue.PoolSpec{Concurrency: 4, Prefetch: intPtr(0)}).Settings(); s.Prefetch != 0 || !s.NoPrefetch {
		t.Errorf("prefetch 0 gives %+v, want no prefetch", s)
	}
	pooled := c.Pooled()
	if pooled["a"].Name != "p" || pooled["d"].Name != "q" || len(pooled) != 3 {
		t.Errorf("Pooled = %+v", pooled)
	}
}

// TestConfig_Membership: a pooled queue's membership names its pool, mode, concurrency, its
// weight (1 when unset) and the pool's queues heaviest first; a queue in no pool has none.
func TestConfig_Membership(t *testing.T) {
	c := queue.Config{Queues: []queue.Spec{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Pools: []queue.PoolSpec{{Name: "p", Concurrency: 8, Queues: []queue.PoolMember{{Name: "a"}, {Name: "b", Weight: intPtr(5)}}}}}
	m := c.Membership("a")
	if m == nil || m.Pool != "p" || m.Strict || m.Concurrency != 8 || m.Weight != 1 || strings.Join(m.Queues, ",") != "b,a" {
		t.Errorf("membership of a = %+v", m)
	}
	if m := c.Membership("b"); m == nil || m.Weight != 5 {
		t.Errorf("membership of b = %+v", m)
	}
	if m := c.Membership("c"); m != nil {
		t.Errorf("membership of c (no pool) = %+v", m)
	}
}
