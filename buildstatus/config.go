package buildstatus

import (
	"errors"
	"fmt"
	"time"

	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/resilience"
)

// Config configures the build-status registry (the configuration section
// publish.build-status, under the seed's own key names).
type Config struct {
	// TTLDays is the retention after the last write (default 30, the seed's value).
	TTLDays int `koanf:"ttl-days"`
	// TTL, when non-zero, overrides TTLDays with a finer duration (tests, demos).
	TTL time.Duration `koanf:"ttl"`
	// KeyPrefix is the key prefix after the namespace (default DefaultKeyPrefix).
	KeyPrefix string `koanf:"key-prefix"`
	// Resilience is what happens when Redis fails.
	Resilience resilience.Options `koanf:"resilience"`
}

// DefaultConfig returns the seed's settings: 30 days, DefaultKeyPrefix and the seed's breaker
// with the fail-fast policy.
func DefaultConfig() Config {
	return Config{
		TTLDays:    int(DefaultTTL / (24 * time.Hour)),
		KeyPrefix:  DefaultKeyPrefix,
		Resilience: resilience.DefaultOptions(),
	}
}

// EffectiveTTL returns the TTL of build documents: TTL when set, else TTLDays days.
func (o Config) EffectiveTTL() time.Duration {
	if o.TTL > 0 {
		return o.TTL
	}
	return time.Duration(o.TTLDays) * 24 * time.Hour
}

// Validate reports every problem of o at once, each naming its configuration key
// (publish.build-status.*).
func (o Config) Validate() error {
	const p = "publish.build-status."
	var errs []error
	switch {
	case o.TTL < 0:
		errs = append(errs, fmt.Errorf("%sttl: must not be negative, got %s", p, o.TTL))
	case o.TTL == 0 && o.TTLDays < 1:
		errs = append(errs, fmt.Errorf("%sttl-days: must be at least 1 (or set %sttl), got %d", p, p, o.TTLDays))
	}
	if err := keyspace.CheckPrefix(o.KeyPrefix); err != nil {
		errs = append(errs, fmt.Errorf("%skey-prefix: %w", p, err))
	}
	return errors.Join(append(errs, o.Resilience.ValidateAt(p+"resilience."))...)
}
