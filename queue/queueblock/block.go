// Package queueblock opens the job queues as a running block: one broker (memory, or Redis
// when the environment has it), a worker per configured queue, one admin per queue for the
// HTTP API and the dashboard, the shared throughput counts, and the report flow with its record
// store and reconciler on the report queue.
package queueblock

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/periodic"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
	"github.com/redstate/redstate/report/redisrecords"
	"github.com/redstate/redstate/report/sqlrecords"
)

// Name is the block's name in Health, logs and the overview.
const Name = "queue"

// Block is the queue block: a worker per queue of queue.queues, each running its queue's
// handler (the queues of a pool of queue.pools share the pool's worker), with the report flow
// as one client (Client) on the report queue only. Every other
// queue runs its webhook, no worker (external), or a Go handler a program embedding the block
// brings as a Client, with no report checks.
type Block struct {
	// backend is component.BackendMemory or component.BackendRedis.
	backend string
	broker  queue.Broker
	records report.RecordStore
	// reports serves the report routes on the report queue; nil when the report flow is off.
	reports *report.Service
	// admins are the queue admins by queue name.
	admins      map[string]*queue.Admin
	handlers    map[string]string // queue name → config handler name, for logs
	workers     []*queue.Worker
	reconcilers []*report.Reconciler
	log         *slog.Logger
	// sqlRecords is the SQL record store when queue.record-store is sql (swept for expired
	// records by start).
	sqlRecords *sqlrecords.Store
	// throughput counts handled jobs per queue and minute into the broker (shared by every
	// instance, for the dashboard); observer is what workers report to (metrics and it).
	throughput *queue.ThroughputCounter
	observer   queue.Observer
	// throughputs is the broker as a ThroughputStore when broker is wrapped (countingBroker).
	throughputs queue.ThroughputStore
	// sampled is where the next queue size sample starts (sampleSizes).
	sampled int
	// depths reports the depth of every queue with an admin (redstate_queue_depth).
	depths *queue.Metrics
	// recordStore is queue.record-store, for the overview.
	recordStore string
	// reach says whether Redis answers (nil without Redis).
	reach *redisconn.Reachability
	bg    component.Background
	// periodic fires queue.periodic's jobs on the instance holding its lease; nil without
	// entries.
	periodic *periodic.Scheduler
	// pools are the pool memberships of the queues in a pool (PoolOf).
	pools map[string]*queue.PoolMembership
}

// Open builds the queue block from cfg (the queue section) and reports (the report section) on
// env: the memory broker without Redis, the Redis broker (keys under env.Namespace) with it;
// records in env's SQL pool (queue.record-store sql), Redis or memory. The report flow, when
// on (report.Config.QueueIn), is the client of the report queue: its generator (handler
// report), its check (report.CheckJob), its dead-letter hook (report.MarkFailed) and its
// webhook body (report.WebhookBody). clients are the embedding program's, one per queue of
// cfg other than the report queue. Workers are created but not started (see Start). An
// unreachable Redis is not an error: workers log and retry.
// Errors: EINVALID (a client for no queue of cfg or for a queue that has one; a queue whose
// handler no client serves, such as handler report on a queue other than the report queue),
// the stores', workers' and report flow's construction errors.
func Open(ctx context.Context, env component.Env, cfg queue.Config, reports report.Config, clients ...Client) (*Block, error) {
	log := env.Logger()
	qb := &Block{admins: map[string]*queue.Admin{}, handlers: map[string]string{}, log: log, reach: env.Reachability,
		recordStore: cfg.RecordStore}
	retention := cfg.RecordRetention
	if env.Redis == nil {
		qb.backend = component.BackendMemory
		qb.broker = memqueue.NewBroker(memqueue.Options{})
		if len(cfg.Queues) > 0 {
			log.Info("job queues on the embedded memory backend: jobs live only as long as this process (configure Redis for crash safety)")
		}
	} else {
		client := env.Redis
		b, err := redisqueue.New(client, redisqueue.Options{Namespace: env.Namespace})
		if err != nil {
			_ = qb.Close(ctx)
			return nil, fmt.Errorf("queue redis broker: %w", err)
		}
		if cfg.RecordStore == report.RecordStoreRedis {
			rs, err := redisrecords.New(client, redisrecords.Options{Namespace: env.Namespace, Retention: retention})
			if err != nil {
				_ = qb.Close(ctx)
				return nil, fmt.Errorf("queue redis records: %w", err)
			}
			qb.records = rs
			log.Info("job records in redis", "retention", retentionText(retention))
		}
		qb.backend, qb.broker = component.BackendRedis, b
		log.Info("job queues on redis", "redis", env.RedisName, "namespace", env.Namespace)
	}
	switch cfg.RecordStore {
	case report.RecordStoreSQL:
		db, err := env.DB(ctx)
		if err != nil {
			_ = qb.Close(ctx)
			return nil, err
		}
		rs, err := sqlrecords.New(ctx, db, sqlrecords.Options{Retention: retention, Table: reports.SQL})
		if err != nil {
			_ = qb.Close(ctx)
			return nil, fmt.Errorf("queue sql records: %w", err)
		}
		qb.records, qb.sqlRecords = rs, rs
		kept := "forever"
		if retention > 0 {
			kept = retention.String()
		}
		log.Info("job records in sql", "engine", db.Dialect.String(), "retention", kept)
	case report.RecordStoreMemory:
		qb.records = memrecords.New(memrecords.Options{Retention: retention})
		log.Info("job records in memory: they live only as long as this process")
	}

	qm := queue.NewMetrics(env.Metrics)
	observers := queue.MultiObserver{qm}
	qb.depths = qm
	if ts, ok := qb.broker.(queue.ThroughputStore); ok {
		qb.throughput = queue.NewThroughputCounter(ts, 5*time.Second, log)
		observers = append(observers, qb.throughput)
	}
	if env.History != nil {
		observers = append(observers, historyObserver{env.History})
		qb.throughputs, qb.broker = qb.broker.(queue.ThroughputStore), countingBroker{Broker: qb.broker, history: env.History}
		env.History.AddSampler(qb.sampleSizes)
	}
	qb.observer = observers
	specs := cfg.EffectiveQueues(report.HandlerReport)
	reportQueue, reportOn := reports.QueueIn(cfg)
	if reportOn {
		svc, err := qb.openReports(cfg, reportQueue, log)
		if err != nil {
			_ = qb.Close(ctx)
			return nil, err
		}
		qb.admins[reportQueue] = svc.Admin()
		clients = append(slices.Clip(clients), reportClient(reportQueue, qb.records, reports, log))
	}
	byQueue, err := clientsByQueue(specs, clients)
	if err != nil {
		_ = qb.Close(ctx)
		return nil, err
	}
	pooled := cfg.Pooled()
	qb.pools = map[string]*queue.PoolMembership{}
	for name := range pooled {
		qb.pools[name] = cfg.Membership(name)
	}
	weights := map[string]int{}
	for _, p := range cfg.Pools {
		for _, m := range p.Queues {
			weights[m.Name] = m.EffectiveWeight()
		}
	}
	members := map[string][]queue.PoolQueue{} // by pool name
	for _, spec := range specs {
		admin := qb.admins[spec.Name]
		if admin == nil {
			if admin, err = queue.NewAdmin(qb.broker, spec.Name); err != nil {
				_ = qb.Close(ctx)
				return nil, err
			}
			qb.admins[spec.Name] = admin
		}
		qb.handlers[spec.Name] = spec.Handler
		qm.WatchDepth(spec.Name, admin.Stats)
		c := byQueue[spec.Name]
		h, err := handlerFor(spec, c)
		if err != nil {
			_ = qb.Close(ctx)
			return nil, err
		}
		if h == nil {
			log.Info("queue has handler external: no worker here, a consumer outside redstate takes its jobs", "queue", spec.Name)
			continue
		}
		if spec.Handler == queue.HandlerWebhook && spec.Webhook.Secret == "" {
			log.Warn("queue webhook calls are unsigned: set queue.queues[].webhook.secret so the receiver can verify them (docs/security.md)",
				"queue", spec.Name)
		}
		wc := spec.Worker()
		wc.Logger, wc.Observer = log, qb.observer
		wc.Check, wc.OnDead = c.Check, c.OnDead
		if p, ok := pooled[spec.Name]; ok {
			// The pool's concurrency, prefetch and shutdown are its queues' (validated: the
			// queue sets none of its own).
			wc.Concurrency, wc.Prefetch, wc.NoPrefetch = 0, 0, false
			members[p.Name] = append(members[p.Name], queue.PoolQueue{Settings: wc, Handler: h, Weight: weights[spec.Name]})
			continue
		}
		wc.ShutdownTimeout = env.Shutdown()
		w, err := queue.NewWorker(qb.broker, h, wc)
		if err != nil {
			_ = qb.Close(ctx)
			return nil, fmt.Errorf("queue %s: %w", spec.Name, err)
		}
		qb.workers = append(qb.workers, w)
	}
	for _, p := range cfg.Pools {
		if len(members[p.Name]) != len(p.Queues) {
			_ = qb.Close(ctx)
			return nil, redstate.Errorf(redstate.EINVALID, "queue pool %s: its queues must be queues of queue.queues with a worker here, each in one pool (queue.Config.Validate)", p.Name)
		}
		ps := p.Settings()
		ps.ShutdownTimeout, ps.Logger = env.Shutdown(), log
		w, err := queue.NewPool(qb.broker, ps, members[p.Name]...)
		if err != nil {
			_ = qb.Close(ctx)
			return nil, fmt.Errorf("queue pool %s: %w", p.Name, err)
		}
		qb.workers = append(qb.workers, w)
	}
	if err := qb.openPeriodic(env, cfg); err != nil {
		_ = qb.Close(ctx)
		return nil, err
	}
	return qb, nil
}

// openPeriodic builds the scheduler of queue.periodic (none without entries): its lease and
// tick records in Redis (keys under env.Namespace) or in memory, its jobs on the block's broker.
func (qb *Block) openPeriodic(env component.Env, cfg queue.Config) error {
	if len(cfg.Periodic) == 0 {
		return nil
	}
	entries, err := periodic.EntriesFrom(cfg.Periodic)
	if err != nil {
		return err
	}
	keys := periodic.NewKeys(redstate.Prefix(env.Namespace, ""))
	o := periodic.Options{Entries: entries, Keys: keys, Enqueuer: periodic.BrokerEnqueuer{Broker: qb.broker, Retention: cfg.PeriodicRetention}, Logger: qb.log}
	if env.Redis == nil {
		o.Store, o.Leases = periodic.NewMemoryStore(), lease.NewMemory(nil)
	} else {
		if o.Store, err = periodic.NewRedisStore(env.Redis, keys); err != nil {
			return err
		}
		if o.Leases, err = lease.NewRedis(env.Redis, lease.RedisOptions{}); err != nil {
			return err
		}
	}
	qb.periodic, err = periodic.New(o)
	return err
}

// openReports builds the report flow on queue name (report.Config.QueueIn) with its
// reconciler (when enabled), which the service nudges about every failed enqueue.
func (qb *Block) openReports(cfg queue.Config, name string, log *slog.Logger) (*report.Service, error) {
	var nudger report.Nudger
	if cfg.Reconciler.Enabled {
		rc, err := report.NewReconciler(qb.broker, qb.records, report.ReconcilerSettings{
			Queue: name, Age: cfg.Reconciler.Age, Interval: cfg.Reconciler.Interval, Logger: log,
		})
		if err != nil {
			return nil, err
		}
		qb.reconcilers = append(qb.reconcilers, rc)
		nudger = rc
	}
	svc, err := report.NewService(qb.broker, qb.records, report.Options{Queue: name, Logger: log, Nudger: nudger})
	if err != nil {
		return nil, err
	}
	qb.reports = svc
	return svc, nil
}

// Admin returns the admin of a configured queue, or nil.
func (qb *Block) Admin(name string) *queue.Admin { return qb.admins[name] }

// PoolOf returns the pool of queue.pools serving queue name, or nil when it is in no pool.
func (qb *Block) PoolOf(name string) *queue.PoolMembership { return qb.pools[name] }

// Producer returns a producer of a queue with an admin (Admin), or nil for any other name.
func (qb *Block) Producer(name string) *queue.Producer {
	if qb.admins[name] == nil {
		return nil
	}
	p, err := queue.NewProducer(qb.broker, name)
	if err != nil {
		return nil // unreachable: the admin's name was validated
	}
	return p
}

// Names returns the queues with an admin, sorted.
func (qb *Block) Names() []string {
	return slices.Sorted(maps.Keys(qb.admins))
}

// AddAdmin gives a queue another block works (the feed's fan-out queue) an admin, so that
// the API, the dashboard and redstate_queue_depth show it. Errors: EINVALID.
func (qb *Block) AddAdmin(name string) error {
	if _, ok := qb.admins[name]; ok {
		return nil
	}
	a, err := queue.NewAdmin(qb.broker, name)
	if err != nil {
		return err
	}
	qb.admins[name] = a
	qb.depths.WatchDepth(name, a.Stats)
	return nil
}

// Name is "queue".
func (qb *Block) Name() string { return Name }

// Backend is component.BackendMemory or component.BackendRedis.
func (qb *Block) Backend() string { return qb.backend }

// Broker is the block's broker, shared with the blocks that enqueue on it (the feed's fan-out).
func (qb *Block) Broker() queue.Broker { return qb.broker }

// Observer is what the block's workers report handled jobs to (metrics and throughput); a
// block that runs its own worker on Broker reports to it too.
func (qb *Block) Observer() queue.Observer { return qb.observer }

// Reports is the report flow on the report queue, or nil when it is off.
func (qb *Block) Reports() *report.Service { return qb.reports }

// ThroughputStore returns the broker as the shared throughput store, or nil.
func (qb *Block) ThroughputStore() queue.ThroughputStore {
	if qb.throughputs != nil {
		return qb.throughputs
	}
	ts, _ := qb.broker.(queue.ThroughputStore)
	return ts
}

// Start runs every worker and reconciler until ctx ends or Close: workers let their running
// jobs finish (within server.shutdown-timeout).
func (qb *Block) Start(ctx context.Context) error {
	for _, w := range qb.workers {
		p := w.Pool()
		for _, q := range w.QueueSettings() {
			c := q.Settings
			qb.log.Info("queue worker started", "queue", c.Queue, "pool", p.Name, "weight", q.Weight, "strict", p.Strict, "concurrency", c.Concurrency,
				"handler", qb.handlers[c.Queue], "consumer", w.ConsumerID(), "backend", qb.backend, "max_retries", c.MaxRetries, "lease", c.Lease.String())
		}
		qb.bg.Go(ctx, func(ctx context.Context) { _ = w.Run(ctx) })
	}
	for _, rc := range qb.reconcilers {
		qb.bg.Go(ctx, func(ctx context.Context) { _ = rc.Run(ctx) })
	}
	if qb.throughput != nil {
		qb.bg.Go(ctx, func(ctx context.Context) { _ = qb.throughput.Run(ctx) })
	}
	if qb.sqlRecords != nil {
		qb.bg.Go(ctx, func(ctx context.Context) { qb.sweepExpiredRecords(ctx, time.Hour) })
	}
	if qb.periodic != nil {
		qb.bg.Go(ctx, func(ctx context.Context) { _ = qb.periodic.Run(ctx) })
	}
	return nil
}

// Health reports the backend and record store; Redis not answering degrades the block
// (workers retry, submits are kept in SQL).
func (qb *Block) Health(ctx context.Context) component.Status {
	st := component.Status{Name: qb.Name(), Backend: qb.backend + " (records: " + qb.recordStore + ")", State: component.StateOK,
		Detail: fmt.Sprintf("%d queues", len(qb.admins))}
	if qb.reach != nil {
		if _, err := qb.reach.Check(ctx); err != nil {
			st.State, st.Detail = component.StateDegraded, "Redis does not answer: workers retry, submits are kept in SQL"
		}
	}
	return st
}

// sweepExpiredRecords deletes SQL records past their retention every interval until ctx ends.
func (qb *Block) sweepExpiredRecords(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := qb.sqlRecords.DeleteExpired(ctx); err != nil && ctx.Err() == nil {
			qb.log.Warn("deleting expired job records failed; retrying at the next sweep", "err", err)
		} else if n > 0 {
			qb.log.Info("deleted expired job records", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// retentionText describes a record retention for logs ("forever" for none).
func retentionText(d time.Duration) string {
	if d == 0 {
		return "store default"
	}
	return d.String()
}

// Close stops the workers (running jobs finish within the environment's shutdown timeout)
// and the loops, within ctx; the Redis client and SQL pool are the environment's.
func (qb *Block) Close(ctx context.Context) error {
	return qb.bg.Stop(ctx)
}
