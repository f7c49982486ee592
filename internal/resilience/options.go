package resilience

import (
	"errors"
	"fmt"
	"time"
)

// Policies: what a block does while its breaker is open.
const (
	// PolicyFailFast answers 503 while Redis is unavailable (the default).
	PolicyFailFast = "fail-fast"
	// PolicyFallback accepts writes into a degraded store and writes them back later.
	PolicyFallback = "fallback"
)

// FallbackMemory is the only degraded store of the fallback policy.
const FallbackMemory = "memory"

// BreakerConfig is the count-based circuit breaker's settings, under the same keys in every
// section that has one (publish.build-status.resilience.*, feed.resilience.*). Zero fields take
// DefaultBreakerConfig's values (see Options.WithDefaults).
type BreakerConfig struct {
	// FailureRateThreshold is the failure percentage that opens the breaker (default 50).
	FailureRateThreshold int `koanf:"failure-rate-threshold"`
	// WaitDurationInOpenState is how long the breaker stays open (default 10s).
	WaitDurationInOpenState time.Duration `koanf:"wait-duration-in-open-state"`
	// SlidingWindowSize is how many recent calls the failure rate is computed over (default 10).
	SlidingWindowSize int `koanf:"sliding-window-size"`
	// ProbeInterval is how often an open breaker pings Redis (default 250ms): once a ping
	// answers after Redis was unreachable (a new master after a failover, a restarted server,
	// replicas back for redis.durability.wait-replicas), the breaker half-opens at once instead
	// of waiting out WaitDurationInOpenState. Only a breaker given a probe (WithProbe) pings.
	ProbeInterval time.Duration `koanf:"probe-interval"`
}

// Options configure a block's circuit breaker and degraded mode (the configuration section
// publish.build-status.resilience): the breaker's settings, whose keys sit directly in the
// section, and what the block does while the breaker is open. Zero fields take DefaultOptions'
// values (WithDefaults).
type Options struct {
	// Policy is "fail-fast" (503 while Redis is unavailable, the default) or "fallback".
	Policy string `koanf:"policy"`
	// Fallback is the degraded store used by the fallback policy; only "memory" exists.
	Fallback string `koanf:"fallback"`
	// BreakerConfig is the breaker's settings (failure-rate-threshold,
	// wait-duration-in-open-state, sliding-window-size, probe-interval).
	BreakerConfig `koanf:",squash"`
	// WriteBackInterval is how often pending fallback writes are retried (default 1s).
	WriteBackInterval time.Duration `koanf:"write-back-interval"`
	// Journal is the path of the fallback journal, a write-ahead log on local disk (default ""
	// = off). With it, every write accepted by the fallback policy is appended and fsync'ed
	// before it is acknowledged, and replayed at startup, so it survives a crash or kill of the
	// process while Redis is down. Without it, fallback writes live only in memory until
	// written back. Its directory is created if missing; one process at a time may use a path.
	Journal string `koanf:"journal"`
}

// DefaultProbeInterval is BreakerConfig.ProbeInterval's default: four pings a second while the breaker
// is open, so calls resume within about a quarter of a second of Redis answering again.
const DefaultProbeInterval = 250 * time.Millisecond

// DefaultBreakerConfig returns the breaker's default settings: failure rate 50 %, open 10 s,
// window 10, a probe every DefaultProbeInterval.
func DefaultBreakerConfig() BreakerConfig {
	return BreakerConfig{
		FailureRateThreshold:    50,
		WaitDurationInOpenState: 10 * time.Second,
		SlidingWindowSize:       10,
		ProbeInterval:           DefaultProbeInterval,
	}
}

// DefaultOptions returns DefaultBreakerConfig with the fail-fast policy and no journal.
func DefaultOptions() Options {
	return Options{
		Policy:            PolicyFailFast,
		Fallback:          FallbackMemory,
		BreakerConfig:     DefaultBreakerConfig(),
		WriteBackInterval: time.Second,
	}
}

// Options returns the fail-fast Options with b's breaker settings, for a block whose
// degraded mode is its own (the feed falls back to SQL) and so has no policy of its own.
func (b BreakerConfig) Options() Options {
	o := DefaultOptions()
	o.BreakerConfig = b
	return o
}

// WithDefaults returns o with every zero field (Journal excepted) set to DefaultOptions' value.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.Policy == "" {
		o.Policy = d.Policy
	}
	if o.Fallback == "" {
		o.Fallback = d.Fallback
	}
	if o.FailureRateThreshold == 0 {
		o.FailureRateThreshold = d.FailureRateThreshold
	}
	if o.WaitDurationInOpenState == 0 {
		o.WaitDurationInOpenState = d.WaitDurationInOpenState
	}
	if o.SlidingWindowSize == 0 {
		o.SlidingWindowSize = d.SlidingWindowSize
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = d.ProbeInterval
	}
	if o.WriteBackInterval == 0 {
		o.WriteBackInterval = d.WriteBackInterval
	}
	return o
}

// Validate reports every problem of o at once, each naming its key under "resilience.".
func (o Options) Validate() error { return o.ValidateAt("resilience.") }

// ValidateAt is Validate with every key under prefix, the section's place in the configuration
// (e.g. "publish.build-status.resilience.").
func (o Options) ValidateAt(prefix string) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", prefix, key, fmt.Sprintf(format, args...)))
	}
	if o.Policy != PolicyFailFast && o.Policy != PolicyFallback {
		add("policy", "%q is not one of %s, %s", o.Policy, PolicyFailFast, PolicyFallback)
	}
	if o.Fallback != FallbackMemory {
		add("fallback", "%q is not supported; the only fallback store is memory", o.Fallback)
	}
	errs = append(errs, o.BreakerConfig.ValidateAt(prefix))
	if o.WriteBackInterval <= 0 {
		add("write-back-interval", "must be positive, got %s", o.WriteBackInterval)
	}
	if o.Journal != "" {
		if err := checkJournalPath(o.Journal); err != nil {
			add("journal", "%s", err)
		}
	}
	return errors.Join(errs...)
}

// ValidateAt reports every problem of b at once, each naming its key under prefix, the
// section's place in the configuration (e.g. "feed.resilience.").
func (b BreakerConfig) ValidateAt(prefix string) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", prefix, key, fmt.Sprintf(format, args...)))
	}
	if b.FailureRateThreshold < 1 || b.FailureRateThreshold > 100 {
		add("failure-rate-threshold", "must be a percentage between 1 and 100, got %d", b.FailureRateThreshold)
	}
	if b.SlidingWindowSize < 1 {
		add("sliding-window-size", "must be at least 1, got %d", b.SlidingWindowSize)
	}
	if b.WaitDurationInOpenState <= 0 {
		add("wait-duration-in-open-state", "must be positive, got %s", b.WaitDurationInOpenState)
	}
	if b.ProbeInterval <= 0 {
		add("probe-interval", "must be positive, got %s", b.ProbeInterval)
	}
	return errors.Join(errs...)
}
