package executor

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redstate/redstate"
)

// Defaults of the executor's timers (Config and Options).
const (
	// DefaultHeartbeatInterval is the TaskProgressEvent period of running tasks.
	DefaultHeartbeatInterval = 10 * time.Second
	// DefaultOrphanScanInterval is how often RUNNING tasks of other instances are checked.
	DefaultOrphanScanInterval = 10 * time.Second
	// DefaultLivenessTTL is how long an instance counts as alive after its last heartbeat.
	DefaultLivenessTTL = 15 * time.Second
	// DefaultLivenessInterval is how often an instance renews its liveness (lowered to half of
	// the liveness TTL when that is shorter, see Options.LivenessInterval).
	DefaultLivenessInterval = 5 * time.Second
	// DefaultStatsInterval is how often the keyspace is inspected for metrics.
	DefaultStatsInterval = 30 * time.Second
)

// Store types (Persistence.StoreType) and startup policies (Persistence.OnRedisUnavailable).
const (
	// StoreRedis keeps the executor's state in Redis.
	StoreRedis = "redis"
	// StoreMemory keeps it in this process.
	StoreMemory = "memory"
	// OnUnavailableDegrade starts the executor degraded when Redis does not answer at startup: it
	// refuses work (503) until Redis answers, then runs on Redis (executor/executorblock).
	OnUnavailableDegrade = "memory"
	// OnUnavailableFail makes serve fail when Redis does not answer at startup.
	OnUnavailableFail = "fail"
)

// Config is the executor's configuration section (executor.*): its state store, its
// timers and the webhook stage handlers serve offers.
type Config struct {
	// Persistence selects and tunes the state store.
	Persistence Persistence `koanf:"persistence"`
	// HeartbeatInterval is the TaskProgressEvent period of running tasks (default 10s).
	HeartbeatInterval time.Duration `koanf:"heartbeat-interval"`
	// OrphanScanInterval is how often RUNNING tasks of other instances are checked for a dead
	// owner or an expired tenant lock (default 10s).
	OrphanScanInterval time.Duration `koanf:"orphan-scan-interval"`
	// LivenessTTL is how long an instance counts as alive after its last liveness heartbeat;
	// its RUNNING tasks are orphans once it has expired (default 15s).
	LivenessTTL time.Duration `koanf:"liveness-ttl"`
	// LivenessInterval is how often an instance renews its liveness (default 5s, at most half
	// of LivenessTTL).
	LivenessInterval time.Duration `koanf:"liveness-interval"`
	// MetricsInterval is how often the executor keyspace is inspected for the key, lock and
	// leak gauges (default 30s).
	MetricsInterval time.Duration `koanf:"metrics-interval"`
	// Handlers are the webhook stage handlers plans may name (default none).
	Handlers []HandlerConfig `koanf:"handlers"`
}

// Persistence is the seed's executor.persistence block.
type Persistence struct {
	// StoreType is "redis" or "memory" ("" = redis when Redis is configured, else memory).
	StoreType string `koanf:"store-type"`
	// OnRedisUnavailable is what serve does when Redis does not answer at startup: "memory"
	// (start degraded with a loud warning and a metric: refuse work with 503 until Redis
	// answers, then run on Redis; tenant locks are never kept in memory) or "fail" (do not
	// start).
	OnRedisUnavailable string `koanf:"on-redis-unavailable"`
	// Redis holds namespace and TTLs (executor.persistence.redis.*).
	Redis PersistenceConfig `koanf:"redis"`
}

// HandlerConfig is one webhook stage handler: each stage of a task naming it is POSTed to URL.
type HandlerConfig struct {
	// Name is what plans put in a task's "handler".
	Name string `koanf:"name"`
	// URL is the http(s) endpoint.
	URL string `koanf:"url"`
	// Timeout bounds one call (default 30s).
	Timeout time.Duration `koanf:"timeout"`
	// Secret signs every call (HMAC-SHA256, package webhook); empty: calls are unsigned and a
	// warning is logged at startup.
	Secret string `koanf:"secret"`
}

// DefaultConfig returns the executor's defaults: store type chosen by whether Redis is
// configured, start degraded (refusing work until Redis answers) when Redis is down at
// startup, the default key prefix and TTLs,
// the default timers and no handlers.
func DefaultConfig() Config {
	return Config{
		Persistence: Persistence{
			OnRedisUnavailable: OnUnavailableDegrade,
			Redis:              PersistenceConfig{}.WithDefaults(),
		},
		HeartbeatInterval:  DefaultHeartbeatInterval,
		OrphanScanInterval: DefaultOrphanScanInterval,
		LivenessTTL:        DefaultLivenessTTL,
		LivenessInterval:   DefaultLivenessInterval,
		MetricsInterval:    DefaultStatsInterval,
		Handlers:           []HandlerConfig{},
	}
}

// Validate reports every problem of c at once, each naming its configuration key
// (executor.*). Whether store-type redis has a Redis to use is the caller's check.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	p := c.Persistence
	switch p.StoreType {
	case "", StoreMemory, StoreRedis:
	default:
		add("executor.persistence.store-type", "must be redis or memory, got %q", p.StoreType)
	}
	if p.OnRedisUnavailable != OnUnavailableDegrade && p.OnRedisUnavailable != OnUnavailableFail {
		add("executor.persistence.on-redis-unavailable", "must be memory (degrade) or fail, got %q", p.OnRedisUnavailable)
	}
	if p.Redis.KeyPrefix != "" {
		if err := ValidateID("key prefix", p.Redis.KeyPrefix); err != nil {
			add("executor.persistence.redis.key-prefix", "%s", redstate.ErrorMessage(err))
		}
	}
	switch p.Redis.LockPipelining {
	case "", LockPipeliningAuto, LockPipeliningBatch, LockPipeliningOff:
	default:
		add("executor.persistence.redis.lock-pipelining", "must be auto, batch or off, got %q", p.Redis.LockPipelining)
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{"executor.persistence.redis.ttl.checkpoint", p.Redis.TTL.Checkpoint},
		{"executor.persistence.redis.ttl.projection", p.Redis.TTL.Projection},
		{"executor.persistence.redis.ttl.lock", p.Redis.TTL.Lock},
	} {
		if t.d != 0 && t.d < time.Second {
			add(t.key, "must be at least 1s (or 0 for the default), got %s", t.d)
		}
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{"executor.heartbeat-interval", c.HeartbeatInterval},
		{"executor.orphan-scan-interval", c.OrphanScanInterval},
		{"executor.liveness-ttl", c.LivenessTTL},
		{"executor.liveness-interval", c.LivenessInterval},
		{"executor.metrics-interval", c.MetricsInterval},
	} {
		if t.d <= 0 {
			add(t.key, "must be positive, got %s", t.d)
		}
	}
	if err := checkLiveness(c.LivenessTTL, c.LivenessInterval); err != nil {
		add("executor.liveness-interval", "%s", err)
	}
	names := map[string]int{}
	for i, h := range c.Handlers {
		key := fmt.Sprintf("executor.handlers[%d]", i)
		if h.Name == "" {
			add(key+".name", "must not be empty")
		} else if j, dup := names[h.Name]; dup {
			add(key+".name", "%q is also the name of executor.handlers[%d]", h.Name, j)
		} else {
			names[h.Name] = i
		}
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(key+".url", "must be an http(s) URL, got %q", h.URL)
		}
		if h.Timeout < 0 {
			add(key+".timeout", "must not be negative, got %s", h.Timeout)
		}
	}
	return errors.Join(errs...)
}

// checkLiveness is the one rule on the liveness timers, for Config and Options alike: the
// renewal interval is at most half of the TTL, so one lost renewal does not make a live
// instance look dead. Non-positive values are not its concern.
func checkLiveness(ttl, interval time.Duration) error {
	if interval > 0 && ttl > 0 && interval > ttl/2 {
		return fmt.Errorf("%s must be at most half of executor.liveness-ttl (%s), so one lost renewal does not make a live instance look dead", interval, ttl)
	}
	return nil
}
