package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/resilientstore"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/redisconn"
)

// Backend names, as used in logs, the "backend" metric label and the overview.
const (
	backendMemory = "memory"
	backendRedis  = "redis"
)

// buildsComponent is the build-status registry (seed 000) as a component: its store on the
// root's Redis client behind the resilience wrapper, or the embedded memory store.
type buildsComponent struct {
	// name is backendMemory or backendRedis.
	name string
	// store serves the API.
	store buildstatus.Store
	probe *redisProbe
	// policy is the resilience policy (Redis only).
	policy string
	// closers release what the component opened, in order (wrapper, stores).
	closers []func() error
}

// breakerReporter is what the resilient build-status store tells about its circuit breaker.
type breakerReporter interface {
	BreakerState() string
	Pending() int
}

// builds builds the registry's store: the embedded memory store when no Redis is configured;
// otherwise the Redis store on the root's client, instrumented, behind the resilience wrapper
// (fail-fast or fallback to memory, with write-back). An unreachable Redis at startup is
// logged loudly but is not an error: the policy applies per request and /readyz answers 503.
func (a *app) builds(ctx context.Context) (*buildsComponent, error) {
	bs := a.cfg.Publish.BuildStatus
	ttl := bs.EffectiveTTL()
	m, log := a.metrics, a.log
	if a.redis == nil {
		mem := memstore.New(memstore.Options{TTL: ttl})
		log.Info("build-status registry on the embedded memory backend: data lives only as long as this process (configure redis.url, redis.cluster-addrs or redis.sentinel to persist it)",
			"ttl", ttl.String())
		b := &buildsComponent{name: backendMemory, store: buildstatus.Instrument(mem, backendMemory, m, log), closers: []func() error{mem.Close}}
		a.add(b)
		return b, nil
	}
	a.checkRedisAtStartup(ctx)
	keys := buildstatus.NewKeys(a.cfg.Namespace, bs.KeyPrefix)
	opts := redisstore.Options{Keys: keys, TTL: ttl}
	if a.cache != nil {
		opts.Cache = a.cache
	}
	rs, err := redisstore.New(a.redis, opts)
	if err != nil {
		return nil, fmt.Errorf("build-status redis store: %w", err)
	}
	primary := buildstatus.Instrument(rs, backendRedis, m, log)
	fallback := memstore.New(memstore.Options{TTL: ttl})
	res, err := resilientstore.New(primary, fallback, bs.Resilience, m, log, a.breakerProbe())
	if err != nil {
		_ = fallback.Close()
		_ = rs.Close()
		return nil, fmt.Errorf("build-status resilience: %w", err)
	}
	b := &buildsComponent{name: backendRedis, store: res, probe: a.probe, policy: bs.Resilience.Policy,
		closers: []func() error{res.Close, fallback.Close, rs.Close}}
	log.Info("build-status registry on redis", "redis", redisconn.Describe(a.cfg.Redis), "namespace", a.cfg.Namespace,
		"key_prefix", keys.Prefix, "ttl", ttl.String(), "policy", bs.Resilience.Policy, "client_cache", a.cfg.Redis.ClientCache.String())
	a.add(b)
	return b, nil
}

// checkRedisAtStartup pings Redis once and logs the outcome; failure is a loud warning only.
func (a *app) checkRedisAtStartup(ctx context.Context) {
	describe := redisconn.Describe(a.cfg.Redis)
	pingCtx, cancel := context.WithTimeout(ctx, a.cfg.Redis.DialTimeout+time.Second)
	defer cancel()
	if err := redisconn.Ping(pingCtx, a.redis); err != nil {
		policy := a.cfg.Publish.BuildStatus.Resilience.Policy
		consequence := "requests answer 503 unavailable until Redis is back (policy fail-fast)"
		if policy == resilience.PolicyFallback {
			consequence = "requests are served from the in-memory fallback and written back when Redis returns (policy fallback)"
		}
		a.log.Error("REDIS IS UNREACHABLE AT STARTUP; starting anyway: "+consequence+"; /readyz answers 503 until Redis answers",
			"redis", describe, "policy", policy, "error", err)
		return
	}
	a.log.Info("redis reachable", "redis", describe)
}

// Name is "builds".
func (b *buildsComponent) Name() string { return "builds" }

// Start does nothing: the registry has no background work of its own (the resilient store's
// write-back runs from its constructor).
func (b *buildsComponent) Start(context.Context) error { return nil }

// Close releases the stores, in order; the Redis client is the root's.
func (b *buildsComponent) Close(context.Context) error {
	var errs []error
	for _, c := range b.closers {
		errs = append(errs, c())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// Health reports the backend, the breaker and pending write-backs; Redis not answering makes
// the process unready ("redis is unreachable").
func (b *buildsComponent) Health(ctx context.Context) component.Status {
	st := component.Status{Name: b.Name(), Backend: b.name, State: component.StateOK}
	if br, ok := b.store.(breakerReporter); ok {
		st.Detail = fmt.Sprintf("policy %s, breaker %s", b.policy, br.BreakerState())
		if br.BreakerState() != "closed" || br.Pending() > 0 {
			st.State = component.StateDegraded
			st.Detail += fmt.Sprintf(", %d writes waiting for Redis", br.Pending())
		}
	}
	if b.probe != nil {
		if _, err := b.probe.check(ctx); err != nil {
			st.Unready = "redis is unreachable"
			if st.State == component.StateOK {
				st.State, st.Detail = component.StateDegraded, "Redis does not answer; "+st.Detail
			}
		}
	}
	return st
}
