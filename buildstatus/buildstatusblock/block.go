// Package buildstatusblock opens the build-status registry as a running block: the Redis store
// on the environment's client behind the circuit breaker (fail-fast, or fallback to memory with
// write-back), or the embedded memory store when the environment has no Redis.
package buildstatusblock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/resilientstore"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/redisconn"
)

// Name is the block's name in Health, logs and the overview.
const Name = "builds"

// Block is the build-status registry as a component.
type Block struct {
	// backend is component.BackendMemory or component.BackendRedis.
	backend string
	store   buildstatus.Store
	// served is store as the API serves it: with its events counted in the statistics history.
	served buildstatus.Store
	reach  *redisconn.Reachability
	// policy is the resilience policy (Redis only).
	policy string
	// closers release what the block opened, in order (wrapper, stores).
	closers []func() error
}

// breakerReporter is what the resilient store tells about its circuit breaker.
type breakerReporter interface {
	BreakerState() string
	Pending() int
}

// Open builds the registry from cfg (the publish.build-status section) on env: the embedded
// memory store without Redis; otherwise the Redis store under env.Namespace + cfg.KeyPrefix,
// instrumented, behind the resilience wrapper. An unreachable Redis at startup is logged
// loudly but is not an error: the policy applies per request and Health reports the process
// unready. Errors: cfg's or the stores' construction errors.
func Open(ctx context.Context, env component.Env, cfg buildstatus.Config) (*Block, error) {
	ttl := cfg.EffectiveTTL()
	log := env.Logger()
	if env.Redis == nil {
		mem := memstore.New(memstore.Options{TTL: ttl})
		log.Info("build-status registry on the embedded memory backend: data lives only as long as this process (configure redis.url, redis.cluster-addrs or redis.sentinel to persist it)",
			"ttl", ttl.String())
		store := buildstatus.Instrument(mem, component.BackendMemory, env.Metrics, log)
		return &Block{backend: component.BackendMemory, store: store, served: withHistory(store, env.History),
			closers: []func() error{mem.Close}}, nil
	}
	checkRedisAtStartup(ctx, env, cfg.Resilience.Policy)
	keys := buildstatus.NewKeys(redstate.Prefix(env.Namespace, cfg.KeyPrefix))
	opts := redisstore.Options{Keys: keys, TTL: ttl}
	if env.Cache != nil {
		opts.Cache = env.Cache
	}
	rs, err := redisstore.New(env.Redis, opts)
	if err != nil {
		return nil, fmt.Errorf("build-status redis store: %w", err)
	}
	primary := buildstatus.Instrument(rs, component.BackendRedis, env.Metrics, log)
	fallback := memstore.New(memstore.Options{TTL: ttl})
	var breakerOpts []resilience.BreakerOption
	if env.BreakerProbe != nil {
		breakerOpts = append(breakerOpts, resilience.WithProbe(env.BreakerProbe))
	}
	res, err := resilientstore.New(primary, fallback, cfg.Resilience, env.Metrics, log, breakerOpts...)
	if err != nil {
		_ = fallback.Close()
		_ = rs.Close()
		return nil, fmt.Errorf("build-status resilience: %w", err)
	}
	log.Info("build-status registry on redis", "redis", env.RedisName, "namespace", env.Namespace,
		"key_prefix", keys.Prefix, "ttl", ttl.String(), "policy", cfg.Resilience.Policy, "client_cache", env.Cache.String())
	return &Block{backend: component.BackendRedis, store: res, served: withHistory(res, env.History), reach: env.Reachability, policy: cfg.Resilience.Policy,
		closers: []func() error{res.Close, fallback.Close, rs.Close}}, nil
}

// checkRedisAtStartup pings Redis once and logs the outcome; failure is a loud warning only.
func checkRedisAtStartup(ctx context.Context, env component.Env, policy string) {
	log := env.Logger()
	if err := env.StartupPing(ctx); err != nil {
		consequence := "requests answer 503 unavailable until Redis is back (policy fail-fast)"
		if policy == resilience.PolicyFallback {
			consequence = "requests are served from the in-memory fallback and written back when Redis returns (policy fallback)"
		}
		log.Error("REDIS IS UNREACHABLE AT STARTUP; starting anyway: "+consequence+"; /readyz answers 503 until Redis answers",
			"redis", env.RedisName, "policy", policy, "error", err)
		return
	}
	log.Info("redis reachable", "redis", env.RedisName)
}

// Store is the registry the HTTP API and commands serve.
func (b *Block) Store() buildstatus.Store { return b.served }

// Backend is component.BackendMemory or component.BackendRedis.
func (b *Block) Backend() string { return b.backend }

// Name is "builds".
func (b *Block) Name() string { return Name }

// Start does nothing: the registry has no background work of its own (the resilient store's
// write-back runs from its constructor).
func (b *Block) Start(context.Context) error { return nil }

// Close releases the stores, in order; the Redis client is the environment's.
func (b *Block) Close(context.Context) error {
	var errs []error
	for _, c := range b.closers {
		errs = append(errs, c())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// Health reports the backend, the breaker and pending write-backs; Redis not answering makes
// the process unready ("redis is unreachable").
func (b *Block) Health(ctx context.Context) component.Status {
	st := component.Status{Name: b.Name(), Backend: b.backend, State: component.StateOK}
	if br, ok := b.store.(breakerReporter); ok {
		st.Detail = fmt.Sprintf("policy %s, breaker %s", b.policy, br.BreakerState())
		if br.BreakerState() != "closed" || br.Pending() > 0 {
			st.State = component.StateDegraded
			st.Detail += fmt.Sprintf(", %d writes waiting for Redis", br.Pending())
		}
	}
	if b.reach != nil {
		if _, err := b.reach.Check(ctx); err != nil {
			st.Unready = "redis is unreachable"
			if st.State == component.StateOK {
				st.State, st.Detail = component.StateDegraded, "Redis does not answer; "+st.Detail
			}
		}
	}
	return st
}
