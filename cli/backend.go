package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/resilientstore"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/internal/metrics"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/redisconn"
)

// Backend names, as used in logs and the "backend" metric label.
const (
	backendMemory = "memory"
	backendRedis  = "redis"
)

// buildBackend is the build-status registry's store with what serve needs around it.
type buildBackend struct {
	// name is backendMemory or backendRedis.
	name string
	// store serves the API.
	store buildstatus.Store
	// ready is the /readyz check (nil: always ready).
	ready func(ctx context.Context) error
	// closers release everything opened, in order (wrapper, stores, then the Redis client).
	closers []func() error
}

// Close releases everything in order and returns every error.
func (b *buildBackend) Close() error {
	var errs []error
	for _, c := range b.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	b.closers = nil
	return errors.Join(errs...)
}

// openBuildBackend builds the registry's store from cfg: the embedded memory store when no
// Redis is configured; otherwise the Redis store, instrumented, behind the resilience wrapper
// (fail-fast or fallback to memory, with write-back). An unreachable Redis at startup is
// logged loudly but is not an error: the policy applies per request and /readyz answers 503.
func openBuildBackend(ctx context.Context, cfg config.Config, m *metrics.Metrics, log *slog.Logger) (*buildBackend, error) {
	bs := cfg.Publish.BuildStatus
	ttl := bs.EffectiveTTL()
	if !cfg.Redis.Configured() {
		mem := memstore.New(memstore.Options{TTL: ttl})
		log.Info("build-status registry on the embedded memory backend: data lives only as long as this process (configure redis.url, redis.cluster-addrs or redis.sentinel to persist it)",
			"ttl", ttl.String())
		return &buildBackend{
			name:    backendMemory,
			store:   buildstatus.Instrument(mem, backendMemory, m, log),
			closers: []func() error{mem.Close},
		}, nil
	}

	client, err := redisconn.New(cfg.Redis)
	if err != nil {
		return nil, err
	}
	b := &buildBackend{name: backendRedis}
	describe := redisconn.Describe(cfg.Redis)
	checkRedisAtStartup(ctx, client, cfg, describe, log)

	rs, err := redisstore.New(client, redisstore.Options{
		Keys: buildstatus.NewKeys(cfg.Namespace, bs.KeyPrefix),
		TTL:  ttl,
	})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("build-status redis store: %w", err)
	}
	primary := buildstatus.Instrument(rs, backendRedis, m, log)
	fallback := memstore.New(memstore.Options{TTL: ttl})
	res, err := resilientstore.New(primary, fallback, bs.Resilience, m, log)
	if err != nil {
		_ = fallback.Close()
		_ = rs.Close()
		_ = client.Close()
		return nil, fmt.Errorf("build-status resilience: %w", err)
	}
	b.store = res
	b.closers = []func() error{res.Close, fallback.Close, rs.Close, client.Close}
	b.ready = func(ctx context.Context) error { return redisconn.Ping(ctx, client) }
	log.Info("build-status registry on redis", "redis", describe, "namespace", cfg.Namespace,
		"key_prefix", buildstatus.NewKeys(cfg.Namespace, bs.KeyPrefix).Prefix, "ttl", ttl.String(),
		"policy", bs.Resilience.Policy)
	return b, nil
}

// checkRedisAtStartup pings Redis once and logs the outcome; failure is a loud warning only.
func checkRedisAtStartup(ctx context.Context, client redis.UniversalClient, cfg config.Config, describe string, log *slog.Logger) {
	timeout := cfg.Redis.DialTimeout + time.Second
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := redisconn.Ping(pingCtx, client); err != nil {
		policy := cfg.Publish.BuildStatus.Resilience.Policy
		consequence := "requests answer 503 unavailable until Redis is back (policy fail-fast)"
		if policy == resilience.PolicyFallback {
			consequence = "requests are served from the in-memory fallback and written back when Redis returns (policy fallback)"
		}
		log.Error("REDIS IS UNREACHABLE AT STARTUP; starting anyway: "+consequence+"; /readyz answers 503 until Redis answers",
			"redis", describe, "policy", policy, "error", err)
		return
	}
	log.Info("redis reachable", "redis", describe)
}
