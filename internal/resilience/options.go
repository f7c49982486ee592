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

// Options configure a block's circuit breaker and degraded mode (seed 000 section 9; the
// configuration section publish.build-status.resilience). Zero fields take DefaultOptions'
// values (WithDefaults).
type Options struct {
	// Policy is "fail-fast" (503 while Redis is unavailable, the default) or "fallback".
	Policy string `koanf:"policy"`
	// Fallback is the degraded store used by the fallback policy; only "memory" exists.
	Fallback string `koanf:"fallback"`
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
	// WriteBackInterval is how often pending fallback writes are retried (default 1s).
	WriteBackInterval time.Duration `koanf:"write-back-interval"`
	// Journal is the path of the fallback journal, a write-ahead log on local disk (default ""
	// = off). With it, every write accepted by the fallback policy is appended and fsync'ed
	// before it is acknowledged, and replayed at startup, so it survives a crash or kill of the
	// process while Redis is down. Without it, fallback writes live only in memory until
	// written back. Its directory is created if missing; one process at a time may use a path.
	Journal string `koanf:"journal"`
}

// DefaultProbeInterval is Options.ProbeInterval's default: four pings a second while the breaker
// is open, so calls resume within about a quarter of a second of Redis answering again.
const DefaultProbeInterval = 250 * time.Millisecond

// DefaultOptions returns the seed's breaker settings (failure rate 50 %, open 10 s, window 10)
// with the fail-fast policy and no journal.
func DefaultOptions() Options {
	return Options{
		Policy:                  PolicyFailFast,
		Fallback:                FallbackMemory,
		FailureRateThreshold:    50,
		WaitDurationInOpenState: 10 * time.Second,
		SlidingWindowSize:       10,
		ProbeInterval:           DefaultProbeInterval,
		WriteBackInterval:       time.Second,
	}
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
	if o.FailureRateThreshold < 1 || o.FailureRateThreshold > 100 {
		add("failure-rate-threshold", "must be a percentage between 1 and 100, got %d", o.FailureRateThreshold)
	}
	if o.SlidingWindowSize < 1 {
		add("sliding-window-size", "must be at least 1, got %d", o.SlidingWindowSize)
	}
	if o.WaitDurationInOpenState <= 0 {
		add("wait-duration-in-open-state", "must be positive, got %s", o.WaitDurationInOpenState)
	}
	if o.ProbeInterval <= 0 {
		add("probe-interval", "must be positive, got %s", o.ProbeInterval)
	}
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
