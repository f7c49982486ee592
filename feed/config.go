package feed

import (
	"errors"
	"fmt"
	"time"

	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/resilience"
)

// Defaults of the feed section of the configuration.
const (
	// DefaultFanOutQueue is the job queue of fan-outs.
	DefaultFanOutQueue = "feed:fanout"
	// DefaultFanOutConcurrency is how many fan-out jobs run at once per process.
	DefaultFanOutConcurrency = 2
	// DefaultBreakerWait is how long the feed's breaker stays open before Redis is probed
	// again: shorter than the build-status registry's, since the feed's fallback (SQL) is slower.
	DefaultBreakerWait = 5 * time.Second
)

// Config is the feed section of redstate's configuration (feed.*): what the composition root
// builds the feed from. Options is the service's view of it.
type Config struct {
	// Enabled turns the feed routes on (default true).
	Enabled bool `koanf:"enabled"`
	// Prefix is put before every feed key after the namespace (default "": the seed's names).
	Prefix string `koanf:"prefix"`
	// HybridThreshold: authors with more followers get no fan-out; their followers' unread
	// state is computed on read (default DefaultHybridThreshold). At least 1 in the
	// configuration (Options also accepts a negative value, "every author is hybrid", for
	// programs and tests).
	HybridThreshold int64 `koanf:"hybrid-threshold"`
	// FanOutQueue is the job queue of fan-outs (default DefaultFanOutQueue).
	FanOutQueue string `koanf:"fanout-queue"`
	// FanOutConcurrency is how many fan-out jobs run at once (default DefaultFanOutConcurrency).
	FanOutConcurrency int `koanf:"fanout-concurrency"`
	// Breaker is the circuit breaker in front of the feed's Redis calls: while it is open,
	// reads are answered from SQL at once.
	Breaker BreakerConfig `koanf:"breaker"`
	// RepairInterval is how often the Redis state that missed writes (durable repair marks in
	// SQL) is repaired, and Redis probed while the breaker is open (default
	// DefaultRepairInterval).
	RepairInterval time.Duration `koanf:"repair-interval"`
}

// BreakerConfig configures the feed's circuit breaker (the same count-based breaker as
// publish.build-status.resilience, without a policy: the feed always falls back to SQL).
type BreakerConfig struct {
	// FailureRateThreshold is the failure percentage that opens the breaker (default 50).
	FailureRateThreshold int `koanf:"failure-rate-threshold"`
	// WaitDurationInOpenState is how long the breaker stays open before Redis is probed again
	// (default 5s).
	WaitDurationInOpenState time.Duration `koanf:"wait-duration-in-open-state"`
	// SlidingWindowSize is how many recent calls the failure rate is computed over (default 10).
	SlidingWindowSize int `koanf:"sliding-window-size"`
}

// DefaultConfig returns the feed section's defaults.
func DefaultConfig() Config {
	r := resilience.DefaultOptions()
	return Config{Enabled: true, HybridThreshold: DefaultHybridThreshold, FanOutQueue: DefaultFanOutQueue,
		FanOutConcurrency: DefaultFanOutConcurrency, RepairInterval: DefaultRepairInterval,
		Breaker: BreakerConfig{FailureRateThreshold: r.FailureRateThreshold, WaitDurationInOpenState: DefaultBreakerWait,
			SlidingWindowSize: r.SlidingWindowSize}}
}

// Options returns the breaker's resilience options.
func (b BreakerConfig) Options() resilience.Options {
	o := resilience.DefaultOptions()
	o.FailureRateThreshold = b.FailureRateThreshold
	o.WaitDurationInOpenState = b.WaitDurationInOpenState
	o.SlidingWindowSize = b.SlidingWindowSize
	return o
}

// Validate reports every problem of the section at once, each naming its key. The fan-out
// queue's name and its overlap with other queues are checked by the configuration, which
// knows every queue.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.HybridThreshold < 1 {
		add("feed.hybrid-threshold", "must be at least 1, got %d", c.HybridThreshold)
	}
	if c.FanOutConcurrency < 1 {
		add("feed.fanout-concurrency", "must be at least 1, got %d", c.FanOutConcurrency)
	}
	if c.Prefix != "" {
		if err := keyspace.CheckPrefix(c.Prefix); err != nil {
			add("feed.prefix", "%s", err)
		}
	}
	if c.RepairInterval <= 0 {
		add("feed.repair-interval", "must be positive, got %s", c.RepairInterval)
	}
	errs = append(errs, c.Breaker.Options().ValidateAt("feed.breaker."))
	return errors.Join(errs...)
}
