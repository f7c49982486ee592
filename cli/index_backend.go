package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/index/pgsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/index/streamsource"
	"github.com/redstate/redstate/metrics"
)

// indexBackend is the CDC tag index as serve runs it.
type indexBackend struct {
	indexer *index.Indexer
	// streams is the Redis Streams source, nil when index.streams.keys is empty.
	streams *streamsource.Source
	// postgres is the PostgreSQL source, nil when index.postgres.url is empty.
	postgres *pgsource.Source
	// mysql is the MySQL/MariaDB binlog source, nil when index.mysql.url is empty.
	mysql *mysqlsource.Source
	// kafka is the Kafka source, nil when index.kafka.brokers is empty.
	kafka *kafkasource.Source
	log   *slog.Logger
	// backend is component.BackendMemory or component.BackendRedis.
	backend string
	bg      component.Background
}

// Name is "index".
func (ib *indexBackend) Name() string { return "index" }

// Start runs the sources and the counters' flush until ctx ends or Close; a source stopped
// before acknowledging reads its entries again later.
func (ib *indexBackend) Start(ctx context.Context) error {
	if ib.indexer != nil {
		ib.bg.Go(ctx, func(ctx context.Context) { _ = ib.indexer.RunCounters(ctx, 0, ib.log) })
	}
	if ib.streams != nil {
		ib.bg.Go(ctx, func(ctx context.Context) { _ = ib.streams.Run(ctx) })
	}
	if ib.postgres != nil {
		ib.bg.Go(ctx, func(ctx context.Context) { _ = ib.postgres.Run(ctx) })
	}
	if ib.mysql != nil {
		ib.bg.Go(ctx, func(ctx context.Context) { _ = ib.mysql.Run(ctx) }) // a purged position is logged by Run
	}
	if ib.kafka != nil {
		ib.bg.Go(ctx, func(ctx context.Context) {
			if err := ib.kafka.Run(ctx); err != nil {
				ib.log.Error("CDC index Kafka source stopped", "err", err)
			}
		})
	}
	return nil
}

// Close stops the sources and the counters' flush within ctx.
func (ib *indexBackend) Close(ctx context.Context) error { return ib.bg.Stop(ctx) }

// Health reports the backend, the tables and the sources (off without tables).
func (ib *indexBackend) Health(context.Context) component.Status {
	st := component.Status{Name: ib.Name(), Backend: ib.backend, State: component.StateOK}
	if ib.indexer == nil {
		st.State = component.StateOff
		return st
	}
	st.Detail = fmt.Sprintf("%d tables", len(ib.indexer.Tables()))
	for _, s := range ib.sourceStatus() {
		st.Detail += ", source " + s.Name
		if s.Name == "mysql" {
			st.Detail += " (" + mysqlLeaseDetail(ib.mysql) + ")"
		}
	}
	if ib.kafka != nil {
		if f := ib.kafka.Failure(); f != "" {
			st.State = component.StateDegraded
			st.Detail += "; the Kafka source is failing (" + f + "), retrying; nothing is committed past what is applied"
		}
	}
	return st
}

// redisIndexStore is the Redis index store on the root's client, its queries read through
// the client-side cache when redis.client-cache is on.
func (a *app) redisIndexStore() *redisindex.Store {
	if a.cache != nil {
		return redisindex.NewCached(a.redis, a.cache)
	}
	return redisindex.New(a.redis)
}

// index builds the index of cfg.Index.Tables (nil indexer when none are declared): memindex
// without Redis, redisindex on the root's client with it (tables need hash-tag on Cluster),
// and its sources (Redis Streams, Kafka; PostgreSQL and MySQL through a pool the root opens).
func (a *app) openIndex(ctx context.Context) (*indexBackend, error) {
	cfg, m, log := a.cfg, a.metrics, a.log
	ib := &indexBackend{log: log}
	if len(cfg.Index.Tables) == 0 {
		return ib, nil
	}
	opts := a.indexOptions()
	var store index.Store
	var client redis.UniversalClient
	backend := component.BackendMemory
	if a.redis != nil {
		client = a.redis
		store, opts.Cluster, backend = a.redisIndexStore(), redisindex.IsCluster(client), component.BackendRedis
	} else {
		store = memindex.New()
		log.Info("CDC index on the embedded memory backend: it lives only as long as this process (configure Redis to keep it)")
	}
	ix, err := index.New(store, cfg.Index.Tables, opts)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	ib.indexer, ib.backend = ix, backend
	metrics.RegisterIndex(m, ix)
	if st := cfg.Index.Streams; len(st.Keys) > 0 {
		src, err := streamsource.New(ix, streamsource.Options{Client: client, Streams: st.Keys, Group: st.Group,
			Consumer: st.Consumer, Format: st.Format, ClaimIdle: st.ClaimIdle, NullValue: st.NullValue, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("index streams: %w", err)
		}
		ib.streams = src
		metrics.RegisterIndexStreams(m, src)
		log.Info("CDC index consuming Redis Streams", "streams", len(st.Keys), "group", st.Group, "format", st.Format)
	}
	if pg := cfg.Index.Postgres; pg.URL != "" {
		db, err := a.sqlAt(ctx, pg.URL)
		if err != nil {
			return nil, fmt.Errorf("index postgres source: %w", err)
		}
		src, err := pgsource.New(ix, pgsource.Options{DB: db, URL: pg.URL, Plugin: pg.Plugin, Publication: pg.Publication,
			Redis: client, Slot: pg.Slot, Database: pg.Database, Tables: pg.Tables, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("index postgres source: %w", err)
		}
		ib.postgres = src
		metrics.RegisterIndexSource(m, "postgres", src.LagSeconds, func() float64 { return float64(src.LagBytes.Load()) },
			func() float64 { return float64(src.BackfilledRows.Load()) })
		metrics.RegisterIndexSourceProgress(m, "postgres", metrics.SourceProgress{Events: func() float64 { return float64(src.Events.Load()) }})
		log.Info("CDC index following PostgreSQL", "dsn", db.DSN, "slot", pg.Slot, "plugin", pg.Plugin, "tables", pg.Tables)
	}
	if my := cfg.Index.MySQL; my.URL != "" {
		db, err := a.sqlAt(ctx, mysqlsource.SQLURL(my.URL))
		if err != nil {
			return nil, fmt.Errorf("index mysql source: %w", err)
		}
		src, err := mysqlsource.New(ix, mysqlsource.Options{URL: my.URL, DB: db, Redis: client, ServerID: my.ServerID, Tables: my.Tables, Flavor: my.Flavor,
			LeaseTTL: my.LeaseTTL, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("index mysql source: %w", err)
		}
		ib.mysql = src
		metrics.RegisterIndexSource(m, "mysql", src.LagSeconds, func() float64 { return float64(src.LagBytes()) },
			func() float64 { return float64(src.SnapshotRows.Load()) })
		metrics.RegisterIndexSourceLeader(m, "mysql", func() float64 {
			if _, ok := src.Leader(); ok {
				return 1
			}
			return 0
		})
		metrics.RegisterIndexSourceProgress(m, "mysql", mysqlProgress(src))
		log.Info("CDC index following the MySQL binary log", "dsn", db.DSN, "tables", my.Tables)
	}
	src, err := kafkaSource(ix, cfg.Index.Kafka, log)
	if err != nil {
		return nil, fmt.Errorf("index kafka source: %w", err)
	}
	if src != nil {
		ib.kafka = src
		metrics.RegisterIndexKafka(m, src)
	}
	log.Info("CDC index ready", "tables", len(cfg.Index.Tables), "namespace", cfg.Namespace, "prefix", cfg.Index.KeyPrefix, "backend", backend)
	return ib, nil
}

// mysqlProgress reads the binlog source's progress for its metrics.
func mysqlProgress(src *mysqlsource.Source) metrics.SourceProgress {
	return metrics.SourceProgress{
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

// indexOptions are the index's options from cfg.Index, under the namespace (the key rule).
func (a *app) indexOptions() index.Options {
	ix := a.cfg.Index
	return index.Options{Namespace: a.cfg.Namespace, Prefix: ix.KeyPrefix, VersionTTL: ix.VersionTTL, DeadLetterMax: ix.DeadLetterMax,
		Debezium: ix.Debezium}
}

// mysqlLeaseDetail says whether this instance reads the binlog.
func mysqlLeaseDetail(src *mysqlsource.Source) string {
	if fence, ok := src.Leader(); ok {
		return fmt.Sprintf("reading the binlog (fence %d)", fence)
	}
	if src.Standby() {
		return "standby: another instance holds the binlog lease"
	}
	return "not reading the binlog: acquiring the lease (see the log if Redis fails)"
}
