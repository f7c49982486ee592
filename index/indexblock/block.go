// Package indexblock opens the CDC tag index as a running block: the index of the declared
// tables on Redis (or memory without Redis) and its change sources: the HTTP ingest path,
// PostgreSQL logical replication, the MySQL/MariaDB binlog, Redis Streams and Kafka, each an
// index.Source.
package indexblock

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/index/pgsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/index/streamsource"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redisconn"
)

// Name is the block's name in Health, logs and the overview.
const Name = "index"

// Block is the CDC tag index as a component.
type Block struct {
	indexer *index.Indexer
	// push is the HTTP ingest path's source (POST /v1/index/events), nil without tables.
	push *index.PushSource
	// sources are push and the configured sources, in the order the API lists them: PostgreSQL
	// (index.postgres.url), MySQL/MariaDB (index.mysql.url), Redis Streams
	// (index.streams.keys), Kafka (index.kafka.brokers).
	sources []index.Source
	log     *slog.Logger
	// backend is component.BackendMemory or component.BackendRedis.
	backend string
	bg      component.Background
}

// Name is "index".
func (ib *Block) Name() string { return Name }

// Backend is component.BackendMemory or component.BackendRedis.
func (ib *Block) Backend() string { return ib.backend }

// Indexer is the index of the declared tables, or nil when none are declared.
func (ib *Block) Indexer() *index.Indexer { return ib.indexer }

// Push is the HTTP ingest path's source (POST /v1/index/events), or nil without tables.
func (ib *Block) Push() *index.PushSource { return ib.push }

// Start runs the sources, the counters' flush and the move of the tables still of layout 1
// (Indexer.MigrateLayouts) until ctx ends or Close; a source stopped before acknowledging reads
// its entries again later.
func (ib *Block) Start(ctx context.Context) error {
	if ib.indexer != nil {
		ib.bg.Go(ctx, func(ctx context.Context) { _ = ib.indexer.RunCounters(ctx, 0, ib.log) })
		// Rows still of layout 1 are applied correctly meanwhile; this ends the kid- reads.
		ib.bg.Go(ctx, func(ctx context.Context) {
			if err := ib.indexer.MigrateLayouts(ctx, ib.log); err != nil && ctx.Err() == nil {
				ib.log.Error("CDC index layout 2: migration stopped; changes are still applied correctly, run `redstate index migrate-layout`", "err", err)
			}
		})
	}
	for _, src := range ib.sources {
		ib.bg.Go(ctx, func(ctx context.Context) {
			if err := src.Run(ctx); err != nil {
				ib.log.Error("CDC index source stopped", "source", src.Status().Name, "err", err)
			}
		})
	}
	return nil
}

// Close stops the sources and the counters' flush within ctx.
func (ib *Block) Close(ctx context.Context) error { return ib.bg.Stop(ctx) }

// Health reports the backend, the tables and the pulled sources (off without tables):
// degraded while one of them is.
func (ib *Block) Health(context.Context) component.Status {
	st := component.Status{Name: ib.Name(), Backend: ib.backend, State: component.StateOK}
	if ib.indexer == nil {
		st.State = component.StateOff
		return st
	}
	st.Detail = fmt.Sprintf("%d tables", len(ib.indexer.Tables()))
	var failing []string
	for _, src := range ib.Pulled() {
		st.Detail += ", source " + src.Status().Name
		switch h := src.Health(); {
		case h.State == component.StateDegraded:
			st.State, failing = component.StateDegraded, append(failing, h.Reason)
		case h.Reason != "":
			st.Detail += " (" + h.Reason + ")"
		}
	}
	for _, f := range failing {
		st.Detail += "; " + f
	}
	return st
}

// Pulled are the sources that read an upstream (every one but push), in the order the API
// lists them.
func (ib *Block) Pulled() []index.Source {
	var out []index.Source
	for _, src := range ib.sources {
		if src.Status().Kind == index.SourcePulled {
			out = append(out, src)
		}
	}
	return out
}

// RedisStore is the Redis index store on env's client, its queries read through env's
// client-side cache when there is one.
func RedisStore(env component.Env) *redisindex.Store {
	if env.Cache != nil {
		return redisindex.NewCached(env.Redis, env.Cache)
	}
	return redisindex.New(env.Redis)
}

// Open builds the index of cfg.Tables (a block with no indexer when none are declared) on env:
// memindex without Redis, redisindex on env's client with it (tables need hash-tag on Cluster),
// and its sources (Redis Streams, Kafka; PostgreSQL and MySQL through a pool env opens).
// Errors: the index's and the sources' construction errors, each naming its source.
func Open(ctx context.Context, env component.Env, cfg index.Config) (*Block, error) {
	m, log := env.Metrics, env.Logger()
	ib := &Block{log: log}
	if len(cfg.Tables) == 0 {
		return ib, nil
	}
	opts := Options(env.Namespace, cfg)
	var store index.Store
	var client redis.UniversalClient
	backend := component.BackendMemory
	if env.Redis != nil {
		client = env.Redis
		store, opts.Cluster, backend = RedisStore(env), redisconn.IsCluster(client), component.BackendRedis
	} else {
		store = memindex.New()
		log.Info("CDC index on the embedded memory backend: it lives only as long as this process (configure Redis to keep it)")
	}
	ix, err := index.New(store, cfg.Tables, opts)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	ib.indexer, ib.backend, ib.push = ix, backend, index.NewPushSource()
	ib.sources = append(ib.sources, ib.push)
	index.RegisterMetrics(m, ix)
	if rec := env.History; rec != nil {
		ix.ObserveApplied(func(source string, applied, stale int64) {
			rec.Add(history.IndexApplied, applied, source)
			rec.Add(history.IndexStale, stale, source)
		})
	}
	if pg := cfg.Postgres; pg.URL != "" {
		db, err := env.DBAt(ctx, pg.URL)
		if err != nil {
			return nil, fmt.Errorf("index postgres source: %w", err)
		}
		src, err := pgsource.New(ix, pgsource.Options{DB: db, URL: pg.URL, Plugin: pg.Plugin, Publication: pg.Publication,
			Redis: client, Slot: pg.Slot, Database: pg.Database, Tables: pg.Tables, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("index postgres source: %w", err)
		}
		ib.sources = append(ib.sources, src)
		registerSourceLag(m, src)
		// Only the instance following the slot has a lag: the others never applied from it.
		sampleLag(env.History, src.HistorySource(), src.LagSeconds, func() bool { return src.Events.Load() > 0 })
		index.RegisterSourceProgress(m, "postgres", index.SourceProgress{Events: func() float64 { return float64(src.Events.Load()) }})
		log.Info("CDC index following PostgreSQL", "dsn", db.DSN, "slot", pg.Slot, "plugin", pg.Plugin, "tables", pg.Tables)
	}
	if my := cfg.MySQL; my.URL != "" {
		db, err := env.DBAt(ctx, mysqlsource.SQLURL(my.URL))
		if err != nil {
			return nil, fmt.Errorf("index mysql source: %w", err)
		}
		src, err := mysqlsource.New(ix, mysqlsource.Options{URL: my.URL, DB: db, Redis: client, ServerID: my.ServerID, Tables: my.Tables, Flavor: my.Flavor,
			LeaseTTL: my.LeaseTTL, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("index mysql source: %w", err)
		}
		ib.sources = append(ib.sources, src)
		registerSourceLag(m, src)
		sampleLag(env.History, "binlog", src.LagSeconds, func() bool { _, ok := src.Leader(); return ok })
		index.RegisterSourceLeader(m, "mysql", func() float64 {
			if _, ok := src.Leader(); ok {
				return 1
			}
			return 0
		})
		index.RegisterSourceProgress(m, "mysql", mysqlProgress(src))
		log.Info("CDC index following the MySQL binary log", "dsn", db.DSN, "tables", my.Tables)
	}
	if st := cfg.Streams; len(st.Keys) > 0 {
		src, err := streamsource.New(ix, streamsource.Options{Client: client, Streams: st.Keys, Group: st.Group,
			Consumer: st.Consumer, Format: st.Format, ClaimIdle: st.ClaimIdle, NullValue: st.NullValue, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("index streams: %w", err)
		}
		ib.sources = append(ib.sources, src)
		streamsource.RegisterMetrics(m, src)
		sampleStreamBacklog(env.History, src)
		log.Info("CDC index consuming Redis Streams", "streams", len(st.Keys), "group", st.Group, "format", st.Format)
	}
	src, err := KafkaSource(ix, cfg.Kafka, log)
	if err != nil {
		return nil, fmt.Errorf("index kafka source: %w", err)
	}
	if src != nil {
		ib.sources = append(ib.sources, src)
		kafkasource.RegisterMetrics(m, src)
		sampleKafkaBacklog(env.History, src)
	}
	log.Info("CDC index ready", "tables", len(cfg.Tables), "namespace", env.Namespace, "prefix", cfg.KeyPrefix, "backend", backend)
	return ib, nil
}

// mysqlProgress reads the binlog source's progress for its metrics.
func mysqlProgress(src *mysqlsource.Source) index.SourceProgress {
	return index.SourceProgress{
		Events:        func() float64 { return float64(src.Events.Load()) },
		PendingEvents: func() float64 { return float64(src.PendingEvents()) },
		PositionFile: func() float64 {
			n, _ := index.BinlogFileNumber(src.Position().File) // 0 before any position
			return float64(n)
		},
		PositionOffset:   func() float64 { return float64(src.Position().Pos) },
		SnapshotEstimate: func() float64 { return float64(src.SnapshotEstimate()) },
	}
}

// registerSourceLag registers the lag and backfill gauges of a source whose lag is in log
// bytes (PostgreSQL, MySQL), read through its Status.
func registerSourceLag(m *metrics.Metrics, src index.Source) {
	index.RegisterSourceLag(m, src.Status().Name, func() float64 { return src.Status().Lag.Seconds },
		func() float64 { return float64(src.Status().Lag.Behind) }, func() float64 { return float64(src.Status().Copied) })
}

// sampleLag sets index.lag of source from lag at every history flush while active says this
// instance follows the source (the lease holder): another instance's zero must not overwrite
// the follower's figure (a gauge's last write wins). Kafka and Redis Streams carry no commit
// times, so they have no lag in seconds.
func sampleLag(rec *history.Recorder, source string, lag func() float64, active func() bool) {
	rec.AddSampler(func(_ context.Context, r *history.Recorder) {
		if active() {
			r.Set(history.IndexLag, lag(), source)
		}
	})
}

// sampleKafkaBacklog sets index.backlog of every partition of the source's topics from the
// group's lag as last read (every instance reads the whole group's, so whichever writes last
// writes the same figures).
func sampleKafkaBacklog(rec *history.Recorder, src *kafkasource.Source) {
	rec.AddSampler(func(_ context.Context, r *history.Recorder) {
		for _, p := range src.GroupLag().Partitions {
			if p.Lag >= 0 {
				r.Set(history.IndexBacklog, float64(p.Lag), fmt.Sprintf("kafka:%s/%d", p.Topic, p.Partition))
			}
		}
	})
}

// sampleStreamBacklog sets index.backlog of every stream of the source: its group's entries
// not applied yet (one XINFO GROUPS per stream and flush).
func sampleStreamBacklog(rec *history.Recorder, src *streamsource.Source) {
	rec.AddSampler(func(ctx context.Context, r *history.Recorder) {
		backlog, err := src.Backlog(ctx)
		if err != nil {
			return // Redis is down: the chart shows a gap, and the source logs its own failures
		}
		for stream, n := range backlog {
			r.Set(history.IndexBacklog, float64(n), "stream:"+stream)
		}
	})
}

// Options are the index's options from cfg (the index section), under namespace (the key
// rule).
func Options(namespace string, cfg index.Config) index.Options {
	return index.Options{Namespace: namespace, Prefix: cfg.KeyPrefix, VersionTTL: cfg.VersionTTL, DeadLetterMax: cfg.DeadLetterMax,
		Debezium: cfg.Debezium}
}
