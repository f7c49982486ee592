package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/pgsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/index/streamsource"
	"github.com/redstate/redstate/internal/metrics"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// indexBackend is the CDC tag index as serve runs it.
type indexBackend struct {
	indexer *index.Indexer
	// streams is the Redis Streams source, nil when index.streams.keys is empty.
	streams *streamsource.Source
	// postgres is the PostgreSQL source, nil when index.postgres.url is empty.
	postgres *pgsource.Source
	log      *slog.Logger
	close    func() error
}

// start runs the sources and the counters' flush until ctx ends; wait blocks until they
// returned.
func (ib *indexBackend) start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	if ib.indexer != nil {
		wg.Go(func() { _ = ib.indexer.RunCounters(ctx, 0, ib.log) })
	}
	if ib.streams != nil {
		wg.Go(func() { _ = ib.streams.Run(ctx) })
	}
	if ib.postgres != nil {
		wg.Go(func() { _ = ib.postgres.Run(ctx) })
	}
	return wg.Wait
}

// openIndexBackend builds the index of cfg.Index.Tables (nil indexer when none are declared):
// memindex without Redis, redisindex with it (tables need hash-tag on Cluster).
func openIndexBackend(ctx context.Context, cfg config.Config, m *metrics.Metrics, log *slog.Logger) (*indexBackend, error) {
	ib := &indexBackend{log: log, close: func() error { return nil }}
	if len(cfg.Index.Tables) == 0 {
		return ib, nil
	}
	opts := index.Options{Namespace: cfg.Namespace, Prefix: cfg.Index.Prefix, VersionTTL: cfg.Index.VersionTTL, DeadLetterMax: cfg.Index.DeadLetterMax}
	var store index.Store
	var client redis.UniversalClient
	backend := backendMemory
	if cfg.Redis.Configured() {
		c, err := redisconn.New(cfg.Redis)
		if err != nil {
			return nil, err
		}
		client, ib.close = c, c.Close
		store, opts.Cluster, backend = redisindex.New(client), redisindex.IsCluster(client), backendRedis
	} else {
		store = memindex.New()
		log.Info("CDC index on the embedded memory backend: it lives only as long as this process (configure Redis to keep it)")
	}
	ix, err := index.New(store, cfg.Index.Tables, opts)
	if err != nil {
		_ = ib.close()
		return nil, fmt.Errorf("index: %w", err)
	}
	ib.indexer = ix
	metrics.RegisterIndex(m, ix)
	if st := cfg.Index.Streams; len(st.Keys) > 0 {
		src, err := streamsource.New(ix, streamsource.Options{Client: client, Streams: st.Keys, Group: st.Group,
			Consumer: st.Consumer, Format: st.Format, ClaimIdle: st.ClaimIdle, Logger: log})
		if err != nil {
			_ = ib.close()
			return nil, fmt.Errorf("index streams: %w", err)
		}
		ib.streams = src
		log.Info("CDC index consuming Redis Streams", "streams", len(st.Keys), "group", st.Group, "format", st.Format)
	}
	if pg := cfg.Index.Postgres; pg.URL != "" {
		db, err := sqldb.Open(ctx, pg.URL)
		if err != nil {
			_ = ib.close()
			return nil, fmt.Errorf("index postgres source: %w", err)
		}
		redisClose := ib.close
		ib.close = func() error { _ = db.Close(); return redisClose() }
		src, err := pgsource.New(ix, pgsource.Options{DB: db, Redis: client, Slot: pg.Slot, Database: pg.Database, Tables: pg.Tables, Logger: log})
		if err != nil {
			_ = ib.close()
			return nil, fmt.Errorf("index postgres source: %w", err)
		}
		ib.postgres = src
		metrics.RegisterIndexSource(m, "postgres", src.LagSeconds, func() float64 { return float64(src.LagBytes.Load()) },
			func() float64 { return float64(src.BackfilledRows.Load()) })
		log.Info("CDC index following PostgreSQL", "dsn", db.DSN, "slot", pg.Slot, "tables", pg.Tables)
	}
	log.Info("CDC index ready", "tables", len(cfg.Index.Tables), "namespace", cfg.Namespace, "prefix", cfg.Index.Prefix, "backend", backend)
	return ib, nil
}
