package queue

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is the queue section of redstate's configuration (queue.*): the queues, each a Spec,
// and the settings of the job records and their reconciler that the report flow keeps next to them.
// The program built on the queue supplies what is its own: its handler (the handler of a queue
// that names none), its record stores and its defaults (report.DefaultQueueConfig).
type Config struct {
	// RecordStore is where job records (the seed's assessment records) live: one of the
	// program's record stores (report.RecordStoreSQL, the default, report.RecordStoreRedis or
	// report.RecordStoreMemory).
	RecordStore string `koanf:"record-store"`
	// RecordRetention is how long a job record is kept after its last write; 0 (the default)
	// means the store's default (report.DefaultRecordRetention in Redis and memory, forever in
	// SQL).
	RecordRetention time.Duration `koanf:"record-retention"`
	// Queues are the queues serve consumes, each with its own worker unless it is in one of
	// Pools (default: the program's queue, report.DefaultQueueSpec). Handler is the program's handler (the default of an
	// empty one), HandlerWebhook (POST each job to Webhook.URL) or HandlerExternal (no worker
	// here: a consumer outside redstate, such as the seed's legacy service, takes the jobs).
	// From the environment: REDSTATE_QUEUE_QUEUES as a YAML/JSON flow list, e.g.
	// '[{name: report:queue, concurrency: 4}]'.
	Queues []Spec `koanf:"queues"`
	// Periodic are the periodic jobs: each enqueues a job on one of Queues at every tick of its
	// cron expression, once per tick across all instances (package queue/periodic). From the
	// environment: REDSTATE_QUEUE_PERIODIC as a YAML/JSON flow list, e.g.
	// '[{name: nightly, cron: "0 3 * * *", queue: mail:queue}]'.
	Periodic []PeriodicSpec `koanf:"periodic"`
	// PeriodicRetention is how long the record of a finished periodic job (its result and
	// attempts included) is kept; it is also how long a tick's job id is remembered, so at
	// least MinPeriodicRetention. 0 (the default) means DefaultRetention.
	PeriodicRetention time.Duration `koanf:"periodic-retention"`
	// Pools are the worker pools: each serves several of Queues with one budget of handlers,
	// weighted or strict between them (docs/queue.md, "Priorities"); a queue in no pool has its
	// own worker. From the environment: REDSTATE_QUEUE_POOLS as a YAML/JSON flow list, e.g.
	// '[{name: main, concurrency: 8, queues: [{name: report:queue, weight: 3}, {name: mail:queue}]}]'.
	Pools []PoolSpec `koanf:"pools"`
	// Reconciler re-enqueues records stranded in status 3.
	Reconciler ReconcilerConfig `koanf:"reconciler"`
}

// MinPeriodicRetention is the shortest queue.periodic-retention: three times the periodic
// scheduler's lease TTL (periodic.DefaultLeaseTTL, 10 s), so that a tick's id outlives any
// takeover that may fire the tick again.
const MinPeriodicRetention = time.Minute

// ReconcilerConfig configures the reconciler of stranded records (queue.reconciler.*);
// report.ReconcilerSettings is the reconciler's own view of them.
type ReconcilerConfig struct {
	// Enabled turns the reconciler on (default true).
	Enabled bool `koanf:"enabled"`
	// Age is how long a record stays in status 3 before it is checked (default
	// report.DefaultReconcileAge).
	Age time.Duration `koanf:"age"`
	// Interval is how often it runs (default report.DefaultReconcileInterval).
	Interval time.Duration `koanf:"interval"`
}

// EffectiveQueues returns the queues with every default spelled out (Spec.Effective), an empty
// handler as defaultHandler.
func (c Config) EffectiveQueues(defaultHandler string) []Spec {
	if c.Queues == nil {
		return nil
	}
	out := make([]Spec, len(c.Queues))
	for i, s := range c.Queues {
		out[i] = s.Effective()
		if out[i].Handler == "" {
			out[i].Handler = defaultHandler
		}
	}
	return out
}

// Validate reports every problem of the section at once, each naming its key. defaultHandler
// is the program's handler, the one of a queue that names none; recordStores are the record
// stores the program offers. Whether queue names overlap another block's keys is checked by the
// configuration, which knows every block.
func (c Config) Validate(defaultHandler string, recordStores ...string) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.RecordRetention < 0 {
		add("queue.record-retention", "must not be negative, got %s (0 means the store's default)", c.RecordRetention)
	}
	if !slices.Contains(recordStores, c.RecordStore) {
		add("queue.record-store", "must be %s, got %q", oneOf(recordStores), c.RecordStore)
	}
	names := map[string]int{}
	withHandlers := make([]Spec, len(c.Queues))
	for i, s := range c.Queues {
		if s.Handler == "" {
			s.Handler = defaultHandler
		}
		withHandlers[i] = s
		if ValidateQueueName(s.Name) == nil {
			if j, dup := names[s.Name]; dup {
				add(fmt.Sprintf("queue.queues[%d].name", i), "%q is also the name of queue.queues[%d]; names must be unique", s.Name, j)
			} else {
				names[s.Name] = i
			}
		}
		errs = append(errs, s.ValidateAt(fmt.Sprintf("queue.queues[%d].", i), defaultHandler))
	}
	errs = append(errs, validatePeriodic(c.Periodic, c.Queues)...)
	if c.PeriodicRetention != 0 && c.PeriodicRetention < MinPeriodicRetention {
		add("queue.periodic-retention", "must be 0 (the default, %s) or at least %s, got %s: it is how long a tick's job id is remembered, which must outlast three scheduler lease TTLs", DefaultRetention, MinPeriodicRetention, c.PeriodicRetention)
	}
	errs = append(errs, validatePools(c.Pools, withHandlers)...)
	if c.Reconciler.Age <= 0 {
		add("queue.reconciler.age", "must be positive, got %s", c.Reconciler.Age)
	}
	if c.Reconciler.Interval <= 0 {
		add("queue.reconciler.interval", "must be positive, got %s", c.Reconciler.Interval)
	}
	return errors.Join(errs...)
}

// oneOf lists choices as "a, b or c".
func oneOf(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}
