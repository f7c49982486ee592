package cli

import (
	"fmt"
	"log/slog"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/internal/metrics"
	"github.com/redstate/redstate/redisconn"
)

// indexBackend is the CDC tag index as serve runs it.
type indexBackend struct {
	indexer *index.Indexer
	close   func() error
}

// openIndexBackend builds the index of cfg.Index.Tables (nil indexer when none are declared):
// memindex without Redis, redisindex with it (tables need hash-tag on Cluster).
func openIndexBackend(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (*indexBackend, error) {
	ib := &indexBackend{close: func() error { return nil }}
	if len(cfg.Index.Tables) == 0 {
		return ib, nil
	}
	opts := index.Options{Prefix: cfg.Index.Prefix, VersionTTL: cfg.Index.VersionTTL, DeadLetterMax: cfg.Index.DeadLetterMax}
	var store index.Store
	backend := backendMemory
	if cfg.Redis.Configured() {
		client, err := redisconn.New(cfg.Redis)
		if err != nil {
			return nil, err
		}
		ib.close = client.Close
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
	log.Info("CDC index ready", "tables", len(cfg.Index.Tables), "prefix", cfg.Index.Prefix, "backend", backend)
	return ib, nil
}
